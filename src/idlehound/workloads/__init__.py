"""Built-in workloads: the ResNet18/CIFAR10 case the tool grew from."""
