# ruff: noqa: SIM113
"""Written blind (before running lint on it): transfer-learning and Hugging Face style loops."""

import copy

import torch
from tqdm import tqdm


class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0, 0, 0

    def update(self, val, n=1):
        self.sum += val * n  # expect: none
        self.count += n
        self.avg = self.sum / self.count


def accuracy(output, target):
    pred = output.argmax(1)
    return (pred == target).float().mean() * 100.0


def train_model(model, criterion, optimizer, scheduler, dataloaders, dataset_sizes, device, num_epochs=25):
    best_acc = 0.0
    best_wts = copy.deepcopy(model.state_dict())
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":  # expect: none
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)  # expect: item-in-loop
                running_corrects += torch.sum(preds == labels.data)  # expect: none
            if phase == "train":
                scheduler.step()
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"{phase} Loss: {running_loss:.4f} Acc: {epoch_acc:.4f}")  # expect: none
            if phase == "val" and epoch_acc > best_acc:  # expect: none
                best_acc = epoch_acc
                best_wts = copy.deepcopy(model.state_dict())
    model.load_state_dict(best_wts)
    return model


def hf_loop(model, optimizer, lr_scheduler, train_dataloader, accelerator, max_train_steps, wandb):
    completed_steps = 0
    total_loss = 0
    progress_bar = tqdm(range(max_train_steps))
    losses = AverageMeter()
    top1 = AverageMeter()
    for step, batch in enumerate(train_dataloader):
        batch = {k: v.to(accelerator.device) for k, v in batch.items()}  # expect: none
        outputs = model(**batch)
        loss = outputs.loss
        total_loss += loss.detach().float()  # expect: none
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        progress_bar.update(1)
        completed_steps += 1
        acc1 = accuracy(outputs.logits, batch["labels"])
        losses.update(loss.item(), batch["labels"].size(0))  # expect: item-in-loop
        top1.update(acc1, batch["labels"].size(0))  # expect: none
        wandb.log({"loss": loss.item(), "lr": lr_scheduler.get_last_lr()[0]})  # expect: item-in-loop
        progress_bar.set_description(f"loss {loss.item():.3f}")  # expect: item-in-loop
        if completed_steps >= max_train_steps:  # expect: none
            break
        if torch.cuda.memory_allocated() > 70e9:  # expect: none
            print("memory high")
        print(f"step {step}/{len(train_dataloader)}")  # expect: none
