"""The Inspect AI side of the benchmark workloads (run by `bench/run` in bench/.venv-peer).

    inspect eval bench/inspect_task.py --model mockllm/model -T trials=1000 --max-samples C ...

Each sample is one trial, as proctor's oracle trial is: a fresh working directory (the `local`
sandbox makes a temp dir per sample), one shell command that writes a file, run through
`sandbox().exec`, and a scorer that reads the file back and checks it holds the text. The model
(`mockllm/model`) is never called: like proctor's oracle agent, the solver runs a fixed command.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox


@solver
def run_command():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await sandbox().exec(["sh", "-c", state.metadata["command"]])
        return state

    return solve


@scorer(metrics=[accuracy()])
def file_holds():
    async def score(state: TaskState, target: Target) -> Score:
        try:
            text = await sandbox().read_file(state.metadata["path"])
        except FileNotFoundError:
            return Score(value=INCORRECT, explanation="file not found")
        return Score(value=CORRECT if target.text in text else INCORRECT)

    return score


@task
def write_file(trials: int = 1000, compose: str = "") -> Task:
    """`compose`: a compose file for Inspect's docker sandbox (bench/docker_overhead.py
    trials); without it, the local sandbox."""
    samples = [
        Sample(id=i, input="Write the file.", target=f"hello-{i}",
               metadata={"command": f"echo hello-{i} > out.txt", "path": "out.txt"})
        for i in range(trials)
    ]
    return Task(dataset=MemoryDataset(samples), solver=run_command(), scorer=file_holds(),
                sandbox=("docker", compose) if compose else "local")
