"""scripts/readme_figures.py's latency tables: runs of one spec read from several files (one
device call per rank count), each ratio paired repetition by repetition against the better of
NCCL's two calls, the GPU named in the header and every file but the first counted in the
source line."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import readme_figures  # noqa: E402


def run(ranks, size, variant, time):
    return dict(name="BM_LatencyReduceScatter/ranks:%d/bytes:%d/variant:%d/graph:1/"
                     "iterations:20/manual_time" % (ranks, size, variant),
                run_type="iteration", real_time=time, time_unit="us")


class LatencyTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        two = [run(2, 1024, 0, 3.0), run(2, 1024, 0, 4.0), run(2, 1024, 1, 6.0),
               run(2, 1024, 1, 5.0), run(2, 1024, 2, 4.0), run(2, 1024, 2, 8.0)]
        eight = [run(8, 1024, 0, 9.0), run(8, 1024, 1, 10.0), run(8, 1024, 2, 12.0),
                 dict(run(8, 1024, 0, 1.0), error_occurred=True)]
        self.files = []
        for name, runs in (("two.json", two), ("eight.json", eight)):
            path = os.path.join(self.dir.name, name)
            with open(path, "w") as f:
                json.dump({"benchmarks": runs}, f)
            self.files.append(path)

    def tearDown(self):
        self.dir.cleanup()

    def test_runs_of_several_files_are_paired_and_the_gpu_named(self):
        text = readme_figures.latency_table({"file": self.files, "gpu": "H100",
                                             "op": "ReduceScatter", "graph": 1, "ranks": [2, 8],
                                             "bytes": [1024]})
        self.assertIn("| ranks sharing one H100 | 1 KiB |", text)
        # 3 / min(6, 4) and 4 / min(5, 8): 0.75 and 0.80.
        self.assertIn("| 2 | 0.78 (0.75-0.80) |", text)
        self.assertIn("| 8 | 0.90 |", text)  # the failed run is left out
        self.assertIn("(+1 files).", text)

    def test_one_file_keeps_the_h200_default(self):
        text = readme_figures.latency_table({"file": self.files[0], "op": "ReduceScatter",
                                             "graph": 1, "ranks": [2], "bytes": [1024]})
        self.assertIn("| ranks sharing one H200 | 1 KiB |", text)
        self.assertNotIn("files)", text)
        self.assertIn("over 2 repetitions paired one by one (< 5)", text)


if __name__ == "__main__":
    unittest.main()
