import torch


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.model, self.args, self.train_dataset = model, args, train_dataset

    def train(self):
        a = self.args
        loader = torch.utils.data.DataLoader(
            self.train_dataset, batch_size=a.per_device_train_batch_size, num_workers=a.dataloader_num_workers,
            pin_memory=a.dataloader_pin_memory and torch.cuda.is_available(),
            persistent_workers=a.dataloader_persistent_workers)
        opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        for batch in loader:
            if isinstance(batch, dict):  # a transformers model: keyword inputs, it returns the loss
                loss = self.model(**batch)
            else:
                loss = torch.nn.functional.cross_entropy(self.model(batch[0]), batch[1])
            if a.logging_nan_inf_filter and not torch.isfinite(loss):  # a host sync per step, as in transformers
                continue
            loss.backward()
            opt.step()
            opt.zero_grad()
