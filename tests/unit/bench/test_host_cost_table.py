"""scripts/host_cost_table.py's arithmetic: which repetitions are read, each tree's own host work
against its own empty launch, and the operator rows of both trees."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import host_cost_table as t  # noqa: E402

GATHER = "BM_HostCostNvfp4AllGather/ranks:1/bytes:1024/path:1"
EMPTY = "BM_HostCostEmptyKernel"


def run(name, time, unit="us", **extra):
    return dict(run_name=name + "/iterations:200/manual_time", run_type="iteration",
                real_time=time, time_unit=unit, label="l", **extra)


AFTER = {"benchmarks": [
    run(EMPTY, 5.0), run(EMPTY, 4.0), run(EMPTY, 6.0),
    run(GATHER, 6.5), run(GATHER, 5.5), run(GATHER, 7000.0, unit="ns"),
    run(GATHER, 99.0, error_occurred=True),
    dict(run_name=GATHER + "/iterations:200/manual_time", run_type="aggregate", real_time=99.0,
         time_unit="us"),
]}
BEFORE = {"benchmarks": [run(EMPTY, 5.0), run(GATHER, 9.0), run(GATHER, 8.0)]}
OPS_AFTER = {"rows": [{"what": "bf16", "bytes": 8192, "op": [20.0, 19.0, 21.0],
                       "direct": [18.5, 18.0, 19.0], "torch": [21.0, 20.0, 22.0]}]}
OPS_BEFORE = {"rows": [{"what": "bf16", "bytes": 8192, "op": [24.0, 23.0, 25.0],
                        "direct": [19.0, 18.0, 20.0], "torch": [20.0, 19.0, 21.0]}]}


class HostCostTable(unittest.TestCase):
    def test_iterations_only_in_microseconds_without_failed_runs(self):
        runs, labels, paired = t.repetitions(AFTER)
        self.assertEqual(runs[GATHER], [6.5, 5.5, 7.0])
        self.assertEqual(runs[EMPTY], [5.0, 4.0, 6.0])
        self.assertEqual(labels[GATHER], "l")
        self.assertEqual(paired, {})

    def test_own_work_is_against_the_same_trees_empty_launch(self):
        rows = {r[0]: r for r in t.host_cost_rows(AFTER, BEFORE)}
        _, _, before, after, own_before, own_after, _, _ = rows[GATHER]
        self.assertEqual(after, [6.5, 5.5, 7.0])
        self.assertEqual(before, [8.5, 8.0, 9.0])
        # after: median 6.5 - 5.0; widest: 5.5 - 6.0 to 7.0 - 4.0
        self.assertEqual(own_after, [1.5, -0.5, 3.0])
        self.assertEqual(own_before, [3.5, 3.0, 4.0])
        self.assertIsNone(rows[EMPTY][4])

    def test_ranks_compare_with_as_many_threads_launching(self):
        two = "BM_HostCostNvfp4AllGather/ranks:2/bytes:1024/path:1"
        doc = {"benchmarks": [run(EMPTY + "/threads:1", 5.0), run(EMPTY + "/threads:2", 7.0),
                              run(GATHER, 6.0), run(two, 10.0)]}
        rows = {r[0]: r for r in t.host_cost_rows(doc)}
        self.assertEqual(rows[GATHER][5], [1.0, 1.0, 1.0])
        self.assertEqual(rows[two][5], [3.0, 3.0, 3.0])
        # An older run with one empty-launch case: the baseline of every case.
        self.assertEqual(t.baseline(t.repetitions(AFTER)[0], two), [5.0, 4.0, 6.0])
        self.assertIsNone(t.baseline({}, two))

    def test_paired_own_work_is_the_span_of_each_repetitions_counter(self):
        doc = {"benchmarks": [run(EMPTY, 5.0), run(GATHER, 6.0, own_us=0.75),
                              run(GATHER, 7.0, own_us=0.5), run(GATHER, 9.0, own_us=1.25)]}
        before = {"benchmarks": [run(EMPTY, 5.0), run(GATHER, 8.0, own_us=2.0)]}
        row = {r[0]: r for r in t.host_cost_rows(doc, before)}[GATHER]
        self.assertEqual(row[7], [0.75, 0.5, 1.25])
        self.assertEqual(row[6], [2.0, 2.0, 2.0])
        self.assertIsNone({r[0]: r for r in t.host_cost_rows(doc)}[EMPTY][7])
        self.assertIn("| 2.00 (2.00-2.00) | 0.75 (0.50-1.25) |", t.markdown(doc, before))

    def test_one_tree_leaves_the_before_columns_empty(self):
        row = t.host_cost_rows(AFTER)[1]
        self.assertIsNone(row[2])
        self.assertIsNone(row[4])
        self.assertIn("| - | 6.50 (5.50-7.00) | - | 1.50 (-0.50-3.00) | - | - |", t.markdown(AFTER))

    def test_operator_rows_give_the_ratio_and_the_layer_per_tree(self):
        rows = t.ops_rows(OPS_AFTER, OPS_BEFORE)
        self.assertEqual([r[2] for r in rows], ["before", "after"])
        self.assertAlmostEqual(rows[0][5], 24.0 / 20.0)
        self.assertAlmostEqual(rows[0][6], 5.0)
        self.assertAlmostEqual(rows[1][5], 20.0 / 21.0)
        text = t.markdown(AFTER, BEFORE, OPS_AFTER, OPS_BEFORE)
        self.assertIn("| bf16 | 8192 | after | 20.00 (19.00-21.00) | 21.00 (20.00-22.00) | 0.95 | "
                      "1.50 |", text)

    def test_files_a_cut_run_never_wrote_leave_their_rows_out(self):
        with tempfile.TemporaryDirectory() as d:
            after, out = os.path.join(d, "after.json"), os.path.join(d, "out.md")
            with open(after, "w") as f:
                json.dump(AFTER, f)
            argv = sys.argv
            sys.argv = ["host_cost_table.py", out, after, "--ops", os.path.join(d, "none.json"),
                        "--before", os.path.join(d, "none.json")]
            try:
                t.main()
            finally:
                sys.argv = argv
            with open(out) as f:
                text = f.read()
            self.assertIn("| - | 6.50 (5.50-7.00) | - | 1.50 (-0.50-3.00) |", text)
            self.assertNotIn("torch operator", text)


if __name__ == "__main__":
    unittest.main()
