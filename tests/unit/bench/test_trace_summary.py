"""bench/python/trace_summary.py: a traced step's span, busy time (the union of its kernels and
copies, overlaps counted once), idle rest and each kind of work's time per replay, from a Chrome
trace as torch.profiler writes it (CPU events do not count), its table made again from a stored
trace, and two traces compared kernel by kernel."""
import gzip
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "python"))
import trace_summary  # noqa: E402


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur}


# Two replays of a step, one after the other: quantize, dispatch (NCCL), the GEMM overlapped by an
# elementwise kernel, combine (symmcomm) with a memset inside its time; a CPU-side event that must
# not count and a copy after the last replay.
REPLAY = [kernel("void symmcomm::detail::quantize_kernel<1>()", 0, 5),
          kernel("ncclDevKernel_AllGather_RING_LL(...)", 10, 10),
          kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 25, 50),
          kernel("void at::native::vectorized_elementwise_kernel", 70, 10),
          kernel("void symmcomm::detail::lsa::ll_reduce_scatter_kernel", 85, 10),
          {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 86, "dur": 2}]
TRACE = {"traceEvents": REPLAY + [dict(k, ts=k["ts"] + 100) for k in REPLAY] + [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 500},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 200, "dur": 4}]}


class TraceSummary(unittest.TestCase):
    def test_busy_counts_overlapping_kernels_once_and_idle_is_the_rest(self):
        s = trace_summary.summarize(TRACE, 2)
        self.assertAlmostEqual(s["span_us"], 204 / 2)  # first start 0, the copy's end 204
        # Per replay: quantize, dispatch, the GEMM with the kernel it overlaps, combine (the
        # memset inside it); the copy once over both replays.
        self.assertAlmostEqual(s["busy_us"], 80.0 + 4 / 2)
        self.assertAlmostEqual(s["idle_us"], 102.0 - 82.0)
        self.assertEqual(s["work_per_replay"], 6.5)

    def test_each_kind_gets_its_kernels_time(self):
        kinds = trace_summary.summarize(TRACE, 2)["kinds_us"]
        self.assertEqual(kinds, {"GEMM": 50.0, "NCCL": 10.0, "symmcomm": 15.0, "other": 10.0,
                                 "copies": 4.0})
        self.assertEqual(trace_summary.kind_of("ncclDevKernel_SendRecv"), "NCCL")
        self.assertEqual(trace_summary.kind_of("cutlass::Kernel2<grouped>"), "GEMM")
        self.assertEqual(trace_summary.kind_of("triton_poi_fused_0"), "other")
        self.assertEqual(trace_summary.kind_of("Memcpy DtoD", "gpu_memcpy"), "copies")

    def test_longest_kernels_lead_and_the_table_has_a_row_each(self):
        s = trace_summary.summarize(TRACE, 2)
        self.assertEqual(s["longest"][0], ("sm90_xmma_gemm_bf16bf16_bf16f32", 50.0))
        text = trace_summary.table([("symmcomm device counts", s), ("torch", s)])
        lines = text.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertTrue(lines[2].startswith("| symmcomm device counts | 102.0 | 82.0 | 20.0 | 6.5 |"))

    def test_a_trace_without_kernels_is_refused_by_what_it_lacks(self):
        with self.assertRaisesRegex(ValueError, "got 0 kernels"):
            trace_summary.summarize({"traceEvents": TRACE["traceEvents"][-2:-1]}, 2)
        with self.assertRaisesRegex(ValueError, "replays 0"):
            trace_summary.summarize(TRACE, 0)

    def test_a_stored_trace_is_summarised_again(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "step-trace-symmcomm.json")
            with open(path, "w") as f:
                json.dump(dict(TRACE, symmcomm_replays=2), f)
            self.assertEqual(trace_summary.main(["trace_summary.py", path]), 0)
            self.assertEqual(trace_summary.main(["trace_summary.py"]), 2)


    def test_kernels_compare_time_per_replay_and_total_the_shared_ones(self):
        a = trace_summary.per_kernel(TRACE, 2)
        self.assertEqual(a["ncclDevKernel_AllGather_RING_LL(...)"], (1.0, 10.0))
        self.assertEqual(a["Memcpy DtoH"], (0.5, 2.0))
        # B: the same step with a longer elementwise kernel and no NCCL kernel.
        slower = [dict(e, dur=e["dur"] + 3) if "elementwise" in e.get("name", "") else e
                  for e in TRACE["traceEvents"] if "nccl" not in e.get("name", "")]
        b = trace_summary.per_kernel({"traceEvents": slower}, 2)
        text = trace_summary.kernel_table(b, a, ("B", "A"), top=2)
        rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
        self.assertEqual(len(rows), 2)
        self.assertTrue(rows[0].startswith("| ncclDevKernel_AllGather_RING_LL(...) | 0.0 | 10.0 "
                                           "| -10.0 | 0.0 / 1.0 |"), rows[0])
        self.assertIn("| 13.0 | 10.0 | +3.0 | 1.0 / 1.0 |", rows[1])
        # Shared launches: every kernel, memset and copy but the NCCL kernel; only B's elementwise
        # kernel differs.
        self.assertIn("Kernels launched as often in both: 6; their time per replay 82.0 us in B, "
                      "79.0 in A (+3.0); 1 of them took longer in B.", text)

    def test_kernels_mode_reads_gzip_traces_and_names_its_usage(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.json.gz")
            with gzip.open(path, "wt") as f:
                json.dump(dict(TRACE, symmcomm_replays=2), f)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(trace_summary.main(["t", "--kernels", path, path, "3"]), 0)
            self.assertIn("(+0.0); 0 of them took longer", out.getvalue())
            self.assertEqual(trace_summary.main(["t", "--kernels", path]), 2)


    def test_overlap_counts_only_the_time_beside_another_ranks_gemm(self):
        mine = trace_summary.kernels_of({"traceEvents": [
            kernel("void at::native::sigmoid_kernel", 0, 4),       # half beside the GEMM
            kernel("void at::native::topk_kernel", 20, 2),         # alone
            kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 30, 10),     # beside the second GEMM
            kernel("ncclDevKernel_AllGather_RING_LL(...)", 50, 5)]})
        other = trace_summary.kernels_of({"traceEvents": [
            kernel("nvjet_sm90_tst_64x8", 2, 5), kernel("cutlass_gemm", 35, 20),
            kernel("void at::native::sigmoid_kernel", 20, 2)]})  # not a GEMM: never counted
        kinds, mean = trace_summary.overlap(mine, [other])
        self.assertEqual(kinds["other"], (6.0, 2.0))
        self.assertEqual(kinds["GEMM"], (10.0, 5.0))
        self.assertEqual(kinds["NCCL"], (5.0, 5.0))  # 50-55 inside 35-55
        self.assertEqual(mean, {True: (4.0, 1), False: (2.0, 1)})

    def test_traces_of_other_processes_are_put_on_rank_0s_clock(self):
        # Each process counts from its own base: the other rank's GEMM at its ts 3 is rank 0's 5.
        mine = {"baseTimeNanoseconds": 1_000_000, "traceEvents": [
            kernel("void at::native::sigmoid_kernel", 4, 2)]}
        other = {"baseTimeNanoseconds": 1_002_000, "traceEvents": [kernel("cutlass_gemm", 3, 10)]}
        self.assertEqual(trace_summary.kernels_of(other, 1_000_000)[0][:2], (5.0, 15.0))
        self.assertEqual(trace_summary.kernels_of(other)[0][:2], (3.0, 13.0))
        kinds, _ = trace_summary.overlap(trace_summary.kernels_of(mine, 1_000_000),
                                         [trace_summary.kernels_of(other, 1_000_000)])
        self.assertEqual(kinds["other"], (2.0, 1.0))  # 4-6 beside 5-15
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, "r%d.json" % r) for r in (0, 1)]
            for path, trace in zip(paths, (mine, other)):
                with open(path, "w") as f:
                    json.dump(trace, f)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(trace_summary.main(["t", "--overlap"] + paths), 0)
            self.assertIn("| other | 2.0 | 1.0 |", out.getvalue())

    def test_overlap_mode_prints_the_table_and_names_its_usage(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r0.json")
            with open(path, "w") as f:
                json.dump(dict(TRACE, symmcomm_replays=2), f)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(trace_summary.main(["t", "--overlap", path, path]), 0)
            # The same trace as the other rank: its GEMM lies wholly beside itself.
            self.assertIn("| GEMM | 50.0 | 50.0 |", out.getvalue())
            self.assertEqual(trace_summary.main(["t", "--overlap", path]), 2)


if __name__ == "__main__":
    unittest.main()
