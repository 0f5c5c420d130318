"""bench/plot.py --device-counts's arithmetic: which runs are read, the combine's BF16 NCCL baseline
beside its NVFP4 rows, and the device-count calls against the better padded call, paired
repetition by repetition."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import plot  # noqa: E402


def run(name, time, **extra):
    return dict(name=name + "/iterations:10/manual_time", run_type="iteration", real_time=time,
                time_unit="us", **extra)


COMBINE = "BM_DeviceCountsCombine/ranks:4/mean_tokens:4"
GATHER = "BM_DeviceCountsGather/ranks:2/mean_tokens:8"
DOC = {"benchmarks": [
    run(COMBINE + "/variant:1/nvfp4:1/graph:1", 10.0),
    run(COMBINE + "/variant:1/nvfp4:1/graph:1", 12.0),
    run(COMBINE + "/variant:5/nvfp4:0/graph:1", 9.0),
    run(COMBINE + "/variant:5/nvfp4:0/graph:1", 13.0),
    run(COMBINE + "/variant:4/nvfp4:1/graph:1", 6.0),
    run(COMBINE + "/variant:4/nvfp4:1/graph:1", 8.0),
    run(GATHER + "/variant:3/graph:0", 5.0),
    run(GATHER + "/variant:1/graph:0", 10.0),
    run(GATHER + "/variant:0/graph:0", 0.0, error_occurred=True),
    dict(name=GATHER + "/variant:3/graph:0/iterations:10/manual_time_median",
         run_type="aggregate", real_time=99.0, time_unit="us"),
]}


class DeviceCountsTable(unittest.TestCase):
    def test_runs_are_grouped_and_the_bf16_baseline_stands_beside_nvfp4(self):
        runs = plot.device_counts_runs(DOC)
        self.assertEqual(runs[("Combine", "nvfp4", 4, 4, 1)],
                         {1: [10.0, 12.0], 5: [9.0, 13.0], 4: [6.0, 8.0]})
        self.assertEqual(runs[("Combine", "bf16", 4, 4, 1)], {5: [9.0, 13.0]})
        self.assertEqual(runs[("Gather", "nvfp4", 2, 8, 0)], {3: [5.0], 1: [10.0]})
        self.assertEqual(len(runs), 3)

    def test_device_counts_are_paired_with_the_better_padded_call(self):
        by_variant = plot.device_counts_runs(DOC)[("Combine", "nvfp4", 4, 4, 1)]
        # 6 / min(10, 9) and 8 / min(12, 13): both 2/3.
        median, low, high = plot._ratio_padded(by_variant, 4)
        self.assertAlmostEqual(median, 2.0 / 3.0)
        self.assertAlmostEqual(low, 2.0 / 3.0)
        self.assertAlmostEqual(high, 2.0 / 3.0)
        self.assertIsNone(plot._ratio_padded(by_variant, 3))  # no one-launch run

    def test_markdown_has_a_row_per_case(self):
        text = plot.device_counts_markdown(plot.device_counts_runs(DOC), "H200")
        self.assertIn("| gather | nvfp4 | 2 | 8 | eager | 10.00 us | 5.00 us | - | - | "
                      "0.50 (0.50-0.50) | - | - |", text)
        self.assertIn("| combine | nvfp4 | 4 | 4 | graph | 11.00 us | - | 7.00 us | 11.00 us | - | "
                      "0.67 (0.67-0.67) | - |", text)


if __name__ == "__main__":
    unittest.main()
