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


def _tool_turns(turns: int, tool: str = "run_command"):
    """mockllm's outputs for the agent-loop workload: per sample, from its own history (so
    concurrent samples never share a script), `turns` tool calls appending `step-J` to
    log.txt, then a plain answer that ends the loop, as proctor's `mock/solver` does. Usage
    is given, as proctor's mock gives it: else mockllm counts tokens with tiktoken, which
    downloads its tables (no network here)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    def output(messages, tools, tool_choice, config) -> ModelOutput:
        done = sum(1 for m in messages if m.role == "tool")
        if done < turns:
            out = ModelOutput.for_tool_call("mockllm/model", tool,
                                            {"command": f"echo step-{done} >> log.txt"})
        else:
            out = ModelOutput.from_content("mockllm/model", "done")
        out.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
        return out

    return output


def command_tool():
    """proctor's `run_command` tool: `sh -c COMMAND` in the sandbox. (Inspect's own `bash`
    tool runs `bash --login -c`, which on a machine with a heavy profile costs more than the
    loop being measured.)"""
    from inspect_ai.tool import tool

    @tool
    def run_command():
        async def execute(command: str) -> str:
            """Run a shell command with `sh -c` in the working directory.

            Args:
              command: The shell command.
            """
            r = await sandbox().exec(["sh", "-c", command])
            return f"exit code {r.returncode}\n{r.stdout}{r.stderr}"

        return execute

    return run_command()


@task
def agent_loop(trials: int = 100, turns: int = 10, tool: str = "sh") -> Task:
    """The agent-loop workload: each sample a model calling a tool `turns` times (Inspect's
    own tool loop: `use_tools` + `generate`), then the file checked. `tool=bash`: Inspect's
    own `bash` tool instead (`bash --login -c`: it costs what this machine's login profile
    costs; docs/benchmarks.md)."""
    from inspect_ai.model import get_model
    from inspect_ai.solver import generate, use_tools

    samples = [Sample(id=i, input="Write the log.", target=f"step-{turns - 1}",
                      metadata={"path": "log.txt"}) for i in range(trials)]
    if tool == "bash":
        from inspect_ai.tool import bash

        tools, outputs = bash(), _tool_turns(turns, "bash")
    else:
        tools, outputs = command_tool(), _tool_turns(turns)
    return Task(dataset=MemoryDataset(samples), solver=[use_tools(tools), generate()],
                scorer=file_holds(), sandbox="local",
                model=get_model("mockllm/model", custom_outputs=outputs))
