#!/usr/bin/env python3
"""What PyTorch's NCCL symmetric memory exposes, and what symmcomm sees of it (#31 item 4).

Run on a GPU machine with PyTorch, one process per rank:
    torchrun --nproc-per-node 2 scripts/probe_torch_symm.py [OUT_DIR]
(ranks may share one GPU: symmcomm.share_gpus_if_needed sets NCCL's variables; PyTorch must then
load an NCCL >= 2.30, e.g. LD_PRELOAD=$PWD/.nccl-2.30.7/lib/libnccl.so.2). Each step is tried and
its outcome recorded, never assumed: rank 0 prints a summary and writes probe_torch_symm.json.

Steps: set_backend("NCCL"); symm_mem.empty + rendezvous on the world group; the handle's public
attributes (is a window handle or communicator among them?); symmcomm borrowing the group's
communicator (from_process_group) and asking provenance() about the tensor (does symmcomm know the
memory is a window?); an all-gather between two rendezvoused tensors through symmcomm (which path,
why); the MemPool route (register_mem_pool(pool, symm=True)) where this PyTorch has it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import symmcomm  # noqa: E402


def attempt(record, name, fn):
    try:
        value = fn()
        record[name] = {"ok": True, "value": value}
        return value
    except Exception as e:  # noqa: BLE001 - every failure is the finding
        record[name] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        return None


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    sharing = symmcomm.share_gpus_if_needed(rank, local)
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=torch.device("cuda", device))
    r = {"torch": torch.__version__, "torch_nccl": ".".join(map(str, torch.cuda.nccl.version())),
         "symmcomm_nccl": symmcomm.nccl_version(), "world": world, "sharing": sharing}
    import torch.distributed._symmetric_memory as symm_mem
    group = dist.group.WORLD
    attempt(r, "set_backend_nccl", lambda: symm_mem.set_backend("NCCL"))
    attempt(r, "backend", lambda: symm_mem.get_backend(torch.device("cuda", device)))
    n = 1 << 20
    src = attempt(r, "empty", lambda: str(symm_mem.empty(n, dtype=torch.uint8, device="cuda").shape))
    t = symm_mem.empty(n, dtype=torch.uint8, device="cuda") if src else None
    dst = symm_mem.empty(n * world, dtype=torch.uint8, device="cuda") if src else None
    handle = attempt(r, "rendezvous", lambda: type(symm_mem.rendezvous(t, group.group_name)).__name__)
    if handle:
        h = symm_mem.rendezvous(t, group.group_name)
        symm_mem.rendezvous(dst, group.group_name)
        public = [a for a in dir(h) if not a.startswith("_")]
        r["handle_attributes"] = public
        r["handle_window_or_comm_attributes"] = [a for a in public
                                                 if "win" in a.lower() or "comm" in a.lower()]
        attempt(r, "buffer_ptrs", lambda: [hex(p) for p in h.buffer_ptrs])
        attempt(r, "offset", lambda: h.offset)
    comm = attempt(r, "from_process_group", lambda: symmcomm.Communicator.from_process_group(group))
    if comm is not None:
        attempt(r, "comm_info", lambda: list(comm.info()))
        if t is not None:
            attempt(r, "provenance_of_rendezvoused", lambda: list(symmcomm.provenance(comm, t, None)))
            t.fill_(rank + 1)

            def gather():
                # The bytes as bf16 (the package's plain gathers take bf16/fp32 tensors).
                plan = symmcomm.all_gather(comm, t.view(torch.bfloat16), dst.view(torch.bfloat16))
                torch.cuda.synchronize()
                got = dst.view(world, n)[:, 0].tolist()
                return {"path": plan.path, "why": plan.why, "first_bytes": got}
            attempt(r, "all_gather_on_rendezvoused", gather)
    backend = attempt(r, "pg_backend", lambda: type(group._get_backend(torch.device("cuda"))).__name__)
    if backend:
        b = group._get_backend(torch.device("cuda"))
        r["register_mem_pool_available"] = hasattr(b, "register_mem_pool")
        if hasattr(b, "register_mem_pool"):
            def mem_pool_route():
                pool = torch.cuda.MemPool(symm_mem.get_mempool_allocator(torch.device("cuda", device)))
                b.register_mem_pool(pool, symm=True)
                with torch.cuda.use_mem_pool(pool):
                    x = torch.empty(n, dtype=torch.uint8, device="cuda")
                return {"provenance": list(symmcomm.provenance(comm, x, None)) if comm else None}
            attempt(r, "mem_pool_symm", mem_pool_route)
    dist.barrier()
    if rank == 0:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "probe_torch_symm.json"), "w") as f:
            json.dump(r, f, indent=1, default=str)
        print(json.dumps(r, indent=1, default=str))
    if comm is not None:
        comm.release()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
