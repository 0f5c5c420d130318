"""The package at two ranks (two processes, sharing the GPU where there is one): every collective
on PyTorch's borrowed NCCL communicator and on one symmcomm creates, against PyTorch's
references (ranks_worker.py), the torch operators' C++ implementations against their Python
ones and exact references (ops_ranks_worker.py), symmcomm.moe.MoeGroup against its one-process
simulation (moe_ranks_worker.py), and the MoE examples (eager; compiled and
replayed from a CUDA graph) under the same launch. Skips (saying why) without PyTorch or a GPU,
and the operators' test without libsymmcomm_torch.so."""
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible to PyTorch", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(PACKAGE_ROOT, "..", "examples", "python")
EXAMPLE = os.path.join(EXAMPLES, "moe_layer.py")
WORLD = 2
TIMEOUT_S = int(os.environ.get("SYMMCOMM_RANKS_TIMEOUT_S", "240"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(script):
    """Runs `script` as WORLD ranks (torch.distributed's environment) and returns their outputs;
    fails naming the rank that failed or hung, with its output."""
    port = str(free_port())
    procs = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                   LOCAL_WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = []
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            pytest.fail("rank %d of %s did not finish in %d s:\n%s"
                        % (rank, os.path.basename(script), TIMEOUT_S, out[-4000:]))
        outputs.append(out)
        assert p.returncode == 0, "rank %d of %s exited %d:\n%s" % (
            rank, os.path.basename(script), p.returncode, out[-4000:])
    for out in outputs:
        print(out)
    return outputs


def test_two_ranks_every_collective_borrowed_and_owned_against_torch():
    outputs = run_ranks(os.path.join(HERE, "ranks_worker.py"))
    for rank, out in enumerate(outputs):
        assert "ranks_worker rank %d: OK" % rank in out, out


def test_the_cpp_operators_match_the_python_ones_at_two_ranks():
    outputs = run_ranks(os.path.join(HERE, "ops_ranks_worker.py"))
    for out in outputs:
        if "C++ operators unavailable: " in out:
            pytest.skip("C++ operators: " + out.split("C++ operators unavailable: ")[1].strip())
    for rank, out in enumerate(outputs):
        assert "ops_ranks_worker rank %d: OK" % rank in out, out


def test_the_moe_group_dispatches_and_combines_as_the_one_process_world_at_two_ranks():
    # symmcomm.moe.MoeGroup's fallback path (all-gathers, placement, fp32 reduce-scatter) on real
    # ranks, eager and in a CUDA graph replayed with new routing, against test_moe_group.py's
    # simulation: every byte placed, the combine rounded once.
    outputs = run_ranks(os.path.join(HERE, "moe_ranks_worker.py"))
    for rank, out in enumerate(outputs):
        assert "moe_ranks_worker rank %d: OK" % rank in out, out


def test_the_moe_group_example_replays_its_graph_at_two_ranks():
    # examples/python/moe_group_layer.py: route, dispatch by expert, the expert stand-in on the
    # masked layout and combine, in one CUDA graph replayed with new tokens.
    outputs = run_ranks(os.path.join(EXAMPLES, "moe_group_layer.py"))
    for out in outputs:
        assert "moe_group_layer.py: OK" in out, out


def test_the_moe_example_at_two_ranks():
    outputs = run_ranks(EXAMPLE)
    for out in outputs:
        assert "moe_layer.py: OK" in out, out


def test_the_compiled_moe_example_replays_its_graph_at_two_ranks():
    # torch.compile(fullgraph=True) of the device-count ops, captured in one CUDA graph per rank
    # and replayed with new counts each step; every rank checks its rows against eager math.
    outputs = run_ranks(os.path.join(EXAMPLES, "moe_layer_compiled.py"))
    for rank, out in enumerate(outputs):
        assert "moe_layer_compiled.py rank %d: OK" % rank in out, out
        assert "replaying with new counts" in out, out


def test_the_dynamic_shapes_example_compiles_once_at_two_ranks():
    # The token dimension marked dynamic: three batch sizes, one graph, no graph break, eager's
    # bytes on every rank.
    outputs = run_ranks(os.path.join(EXAMPLES, "dynamic_shapes.py"))
    for rank, out in enumerate(outputs):
        assert "dynamic_shapes.py rank %d: OK" % rank in out, out
        assert "1 graph compiled, 0 recompilations, 0 graph breaks" in out, out
