"""Held-out lint set, second batch (written after the rules changed, scored as is): a small GAN trained with
Accelerate, two optimizers, logging through accelerator.log."""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

NZ = 64
MSG = "[%d/%d] loss_D %.4f loss_G %.4f"


def main():
    accelerator = Accelerator(log_with="tensorboard", project_dir="runs")
    data = TensorDataset(torch.randn(10000, 784))
    loader = DataLoader(data, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)  # expect: none
    netG = torch.nn.Sequential(torch.nn.Linear(NZ, 256), torch.nn.ReLU(), torch.nn.Linear(256, 784), torch.nn.Tanh())
    netD = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.LeakyReLU(0.2), torch.nn.Linear(256, 1))
    optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    netG, netD, optD, optG, loader = accelerator.prepare(netG, netD, optD, optG, loader)
    criterion = torch.nn.BCEWithLogitsLoss()
    for epoch in range(25):
        for i, (real,) in enumerate(loader):
            b = real.size(0)
            noise = torch.randn(b, NZ, device=accelerator.device)
            fake = netG(noise)
            optD.zero_grad()
            errD = criterion(netD(real), torch.ones(b, 1, device=accelerator.device)) + criterion(netD(fake.detach()), torch.zeros(b, 1, device=accelerator.device))
            accelerator.backward(errD)
            optD.step()
            optG.zero_grad()
            errG = criterion(netD(fake), torch.ones(b, 1, device=accelerator.device))
            accelerator.backward(errG)
            optG.step()
            accelerator.log({"loss_D": errD.item(), "loss_G": errG.item()}, step=i)  # expect: item-in-loop
            if i % 100 == 0:
                accelerator.print(MSG % (epoch, 25, errD, errG))  # expect: none
            real = real.to(accelerator.device)  # expect: none
        if accelerator.is_main_process:
            torch.save(accelerator.unwrap_model(netG).state_dict(), f"netG_{epoch}.pt")
    accelerator.end_training()


if __name__ == "__main__":
    main()
