"""An LBFGS closure (a real per-step loop) beside an RL rollout loop (env.step is not training)."""

import torch
import torch.optim as optim

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
seq = torch.nn.LSTM(1, 51).to(device)
criterion = torch.nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
inputs = torch.randn(97, 999, 1, device=device)
target = torch.randn(97, 999, 51, device=device)
for i in range(15):
    def closure():
        optimizer.zero_grad()
        out, _ = seq(inputs)
        loss = criterion(out, target)
        print("loss:", loss.item())  # expect: item-in-loop
        loss.backward()
        return loss
    optimizer.step(closure)


class Env:
    def step(self, action):
        return 0.0, 1.0, False


def select_action(policy, state):
    probs = policy(torch.as_tensor(state, device=device))
    return torch.multinomial(probs, 1).item()  # expect: none


def rollout(policy, env, policy_opt):
    running_reward = 10.0
    state = 0.0
    ep_reward = 0.0
    for t in range(1, 10000):
        action = select_action(policy, state)
        state, reward, done = env.step(action)
        ep_reward += reward
        if done:  # expect: none
            break
    running_reward = 0.05 * ep_reward + 0.95 * running_reward
    if running_reward > 195.0:  # expect: none
        print(f"Solved! Running reward is now {running_reward}")  # expect: none
    return running_reward
