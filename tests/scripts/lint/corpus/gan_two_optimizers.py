# ruff: noqa: UP031, UP032
"""DCGAN shape: two networks, two optimizers, host reads every iteration."""

import torch
import torch.nn as nn
import torch.optim as optim

device = torch.device("cuda:0")
netD = nn.Sequential(nn.Conv2d(3, 8, 4), nn.Flatten(), nn.LazyLinear(1), nn.Sigmoid()).to(device)  # expect: cudnn-benchmark-off
netG = nn.Sequential(nn.ConvTranspose2d(16, 3, 4)).to(device)
criterion = nn.BCELoss()
optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))  # expect: none
optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))  # expect: none
dataloader = torch.utils.data.DataLoader(torch.randn(256, 3, 4, 4), batch_size=64, num_workers=2)  # expect: dataloader-no-pin-memory
niter = 5
for epoch in range(niter):
    for i, data in enumerate(dataloader, 0):
        netD.zero_grad()
        real = data.to(device)
        label = torch.full((real.size(0),), 1.0, device=device)
        output = netD(real).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()  # expect: item-in-loop
        noise = torch.randn(real.size(0), 16, 1, 1, device=device)
        fake = netG(noise)
        output = netD(fake.detach()).view(-1)
        errD = errD_real + criterion(output, label.fill_(0.0))
        errD.backward()
        optimizerD.step()
        netG.zero_grad()
        errG = criterion(netD(fake).view(-1), label.fill_(1.0))
        errG.backward()
        optimizerG.step()
        print("[%d/%d][%d/%d] Loss_D: %.4f D(x): %.4f" % (epoch, niter, i, len(dataloader), errD, D_x))  # expect: print-tensor
        print(f"Loss_G: {errG.item():.4f}")  # expect: item-in-loop
