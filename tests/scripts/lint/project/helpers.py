def train(model, optimizer, loader, device):
    for x in loader:
        x = x.to(device)
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
