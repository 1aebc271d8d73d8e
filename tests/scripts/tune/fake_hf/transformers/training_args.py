from dataclasses import dataclass
from typing import Optional


@dataclass
class TrainingArguments:
    output_dir: str
    per_device_train_batch_size: int = 8
    dataloader_num_workers: int = 0
    dataloader_pin_memory: bool = True
    dataloader_persistent_workers: bool = False
    logging_nan_inf_filter: bool = True
    logging_steps: int = 500
    tf32: Optional[bool] = None
    bf16: bool = False
    fp16: bool = False
    torch_compile: bool = False
    group_by_length: bool = False

    def __post_init__(self):
        if self.dataloader_persistent_workers and self.dataloader_num_workers == 0:
            raise ValueError("persistent workers need dataloader_num_workers > 0")
