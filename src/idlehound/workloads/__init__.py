"""Built-in workloads: the ResNet18/CIFAR10 case the tool grew from."""

__all__: list[str] = []  # import the workload modules themselves: idlehound.workloads.resnet, .cifar
