"""bench/plot.py --latency's arithmetic (no matplotlib needed): which runs are read, how the
ratio to NCCL's symmetric kernels is paired, and the table it writes."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import plot  # noqa: E402


def run(name, time, unit="us", **extra):
    return dict(name=name, run_type="iteration", real_time=time, time_unit=unit, **extra)


DOC = {"benchmarks": [
    run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:0/graph:0/manual_time", 14.0),
    run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:0/graph:0/manual_time", 12.0),
    run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:1/graph:0/manual_time", 7000, "ns"),
    run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:1/graph:0/manual_time", 8000, "ns"),
    run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:2/graph:0/manual_time", 9.0),
    dict(name="BM_LatencyAllGather/ranks:2/bytes:1024/variant:0/graph:0/manual_time_mean",
         run_type="aggregate", real_time=99.0, time_unit="us"),
    run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:0/graph:1/manual_time", 5.0),
    run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:1/graph:1/manual_time", 0.0,
        error_occurred=True),
    run("BM_LoopbackAllGatherNvfp4/8", 1.0),
]}


class LatencyTable(unittest.TestCase):
    def test_runs_are_grouped_in_microseconds_without_aggregates_or_errors(self):
        runs = plot.latency_runs(DOC)
        self.assertEqual(runs[("AllGather", 2, 1024, 0)], {0: [14.0, 12.0], 1: [7.0, 8.0], 2: [9.0]})
        self.assertEqual(runs[("ReduceScatter", 8, 4096, 1)], {0: [5.0]})
        self.assertEqual(len(runs), 2)

    def test_ratio_is_ours_over_nccl_symmetric_paired_by_repetition(self):
        rows = plot.latency_table(plot.latency_runs(DOC))
        (op, ranks, size, graph, means, ratio, pdl_ratio, before, after_before, push, better,
         push_better, spread, push_spread) = rows[0]
        self.assertEqual((op, ranks, size, graph), ("AllGather", 2, 1024, 0))
        self.assertAlmostEqual(means[0], 13.0)
        self.assertAlmostEqual(means[1], 7.5)
        self.assertAlmostEqual(ratio[0], (2.0 + 1.5) / 2)
        self.assertAlmostEqual(ratio[1], 1.5)
        self.assertAlmostEqual(ratio[2], 2.0)
        self.assertIsNone(pdl_ratio)  # no PDL run: no ratio
        self.assertIsNone(before)  # no barrier-kernel run: no before / after
        self.assertIsNone(after_before)
        self.assertIsNone(push)  # no push-kernel run: no ratio
        self.assertIsNone(push_better)
        self.assertIsNone(spread)  # no in-order receive run: no ratio
        self.assertIsNone(push_spread)
        # Against the better NCCL call, repetition by repetition: 14 / min(7, 9) (one plain run).
        self.assertAlmostEqual(better[0], 2.0)
        self.assertIsNone(rows[1][5])  # no NCCL symmetric run: no ratio

    def test_markdown_has_a_row_per_case(self):
        text = plot.latency_markdown(plot.latency_table(plot.latency_runs(DOC)), "H200")
        self.assertIn("| AllGather | 2 | 1024 | eager | 13.00 us | 7.50 us | 9.00 us | 1.75 (1.50-2.00) | "
                      "2.00 (2.00-2.00) |",
                      text)
        self.assertIn("| ReduceScatter | 8 | 4096 | graph | 5.00 us | - | - | - | - |", text)
        self.assertNotIn("PDL", text)  # no variant 3 runs: no PDL column

    def test_pdl_runs_get_a_column_and_a_ratio_of_their_own(self):
        doc = {"benchmarks": DOC["benchmarks"] + [
            run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:3/graph:0/manual_time", 7.0),
            run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:3/graph:0/manual_time", 6.0)]}
        rows = plot.latency_table(plot.latency_runs(doc))
        self.assertAlmostEqual(rows[0][6][0], (1.0 + 0.75) / 2)
        text = plot.latency_markdown(rows, "H200")
        self.assertIn("| symmcomm lsa-kernel + PDL | ours / NCCL symmetric (min-max) | "
                      "ours / better NCCL (min-max) | ours + PDL / NCCL symmetric |", text)
        self.assertIn("| AllGather | 2 | 1024 | eager | 13.00 us | 7.50 us | 9.00 us | 6.50 us | "
                      "1.75 (1.50-2.00) | 2.00 (2.00-2.00) | 0.88 (0.75-1.00) |", text)
        self.assertIn("| ReduceScatter | 8 | 4096 | graph | 5.00 us | - | - | - | - | - | - |",
                      text)

    def test_barrier_kernel_runs_give_the_before_and_after_in_one_table(self):
        doc = {"benchmarks": DOC["benchmarks"] + [
            run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:4/graph:0/manual_time", 28.0),
            run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:4/graph:0/manual_time", 16.0)]}
        rows = plot.latency_table(plot.latency_runs(doc))
        self.assertAlmostEqual(rows[0][7][0], (4.0 + 2.0) / 2)  # before / NCCL symmetric
        self.assertAlmostEqual(rows[0][8][0], (0.5 + 0.75) / 2)  # ours / before, paired
        text = plot.latency_markdown(rows, "H200")
        self.assertIn("| symmcomm barrier kernel | ours / NCCL symmetric (min-max) | "
                      "ours / better NCCL (min-max) | barrier kernel / NCCL symmetric | "
                      "ours / barrier kernel |", text)
        self.assertIn("| AllGather | 2 | 1024 | eager | 13.00 us | 7.50 us | 9.00 us | 22.00 us | "
                      "1.75 (1.50-2.00) | 2.00 (2.00-2.00) | 3.00 (2.00-4.00) | "
                      "0.62 (0.50-0.75) |", text)
        self.assertNotIn("PDL", text)

    def test_push_kernel_runs_get_a_column_and_a_ratio_to_nccl_symmetric(self):
        doc = {"benchmarks": DOC["benchmarks"] + [
            run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:1/graph:1/manual_time", 10.0),
            run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:5/graph:1/manual_time", 6.0)]}
        rows = plot.latency_table(plot.latency_runs(doc))
        self.assertAlmostEqual(rows[1][9][0], 0.6)  # push / NCCL symmetric
        text = plot.latency_markdown(rows, "H200")
        self.assertIn("| symmcomm push bf16 | ours / NCCL symmetric (min-max) | "
                      "ours / better NCCL (min-max) | push bf16 / NCCL symmetric | "
                      "push bf16 / better NCCL |", text)
        self.assertIn("| ReduceScatter | 8 | 4096 | graph | 5.00 us | 10.00 us | - | 6.00 us | "
                      "0.50 (0.50-0.50) | 0.50 (0.50-0.50) | 0.60 (0.60-0.60) | "
                      "0.60 (0.60-0.60) |", text)

    def test_receive_mappings_are_compared_within_each_push_kernel(self):
        doc = {"benchmarks": DOC["benchmarks"] + [
            run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:6/graph:1/manual_time", 10.0),
            run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:5/graph:1/manual_time", 6.0),
            run("BM_LatencyReduceScatter/ranks:8/bytes:4096/variant:7/graph:1/manual_time", 4.5)]}
        rows = plot.latency_table(plot.latency_runs(doc))
        self.assertAlmostEqual(rows[1][12][0], 0.5)  # ours (5) / its in-order receive (10)
        self.assertAlmostEqual(rows[1][13][0], 0.75)  # push spread (4.5) / push in order (6)
        self.assertIsNone(rows[0][12])  # the all-gather has no receive mappings
        text = plot.latency_markdown(rows, "H200")
        self.assertIn("| ours / in-order receive | push bf16 spread / in order |", text)
        self.assertIn("| 0.50 (0.50-0.50) | 0.75 (0.75-0.75) |", text)

    def test_barriers_alone_are_set_beside_the_smallest_all_gather(self):
        doc = {"benchmarks": DOC["benchmarks"] + [
            run("BM_LatencyAllGather/ranks:2/bytes:4096/variant:0/graph:0/manual_time", 20.0),
            run("BM_LatencyLsaBarriers/ranks:2/graph:0/manual_time", 6.0),
            run("BM_LatencyLsaBarriers/ranks:2/graph:0/manual_time", 7.0),
            run("BM_LatencyLsaBarriers/ranks:4/graph:1/manual_time", 3000, "ns"),
            dict(name="BM_LatencyLsaBarriers/ranks:2/graph:0/manual_time_mean",
                 run_type="aggregate", real_time=99.0, time_unit="us")]}
        barriers = plot.barrier_runs(doc)
        self.assertEqual(barriers, {(2, 0): [6.0, 7.0], (4, 1): [3.0]})
        text = plot.barrier_markdown(barriers, plot.latency_runs(doc))
        # Against the 1 KiB case (the smallest), not the 4 KiB one.
        self.assertIn("| 2 | eager | 6.50 us | 1024 | 13.00 us | 7.50 us | 0.50 | 0.87 |", text)
        self.assertIn("| 4 | graph | 3.00 us | - | - | - | - | - |", text)
        self.assertEqual(plot.barrier_markdown({}, {}), "")
        self.assertEqual(plot.barrier_runs(DOC), {})
        # With barrier-kernel runs (variant 4), the barriers are set beside that kernel: variant 0
        # then has no barriers.
        doc["benchmarks"].append(
            run("BM_LatencyAllGather/ranks:2/bytes:1024/variant:4/graph:0/manual_time", 26.0))
        text = plot.barrier_markdown(plot.barrier_runs(doc), plot.latency_runs(doc))
        self.assertIn("| symmcomm barrier kernel | NCCL symmetric |", text)
        self.assertIn("| 2 | eager | 6.50 us | 1024 | 26.00 us | 7.50 us | 0.25 | 0.87 |", text)


if __name__ == "__main__":
    unittest.main()
