"""bench/python/step_table.py: the decode step's table from moe_step.py's rows - the speedup over
torch.distributed padded, the launch gaps (the step's median minus its phases' medians, negative
where the phases' own graphs cost more), the ceiling a communication taking no time would give,
and the table made again from a stored run."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "python"))
import step_table  # noqa: E402


def row(way, step, quantize, dispatch, experts, combine, tokens=4):
    return {"tokens_per_rank": tokens, "way": way, "step_us": step, "quantize_us": quantize,
            "dispatch_us": dispatch, "experts_us": experts, "combine_us": combine,
            "tokens_per_s": 1000.0, "comm_share": 0.25}


ROWS = [
    row("symmcomm device counts", [100.0, 90.0, 130.0, 95.0, 105.0], [5.0] * 5, [10.0] * 5,
        [50.0, 60.0, 55.0, 40.0, 70.0], [15.0] * 5),
    row("torch.distributed padded", [120.0] * 5, [5.0] * 5, [30.0] * 5, [55.0] * 5,
        [40.0] * 5),
]


class StepTable(unittest.TestCase):
    def test_gaps_are_the_step_median_minus_the_phase_medians(self):
        self.assertAlmostEqual(step_table.gaps_us(ROWS[0]), 100.0 - (5 + 10 + 55 + 15))
        self.assertAlmostEqual(step_table.gaps_us(ROWS[1]), 120.0 - (5 + 30 + 55 + 40))

    def test_rows_carry_speedup_gaps_and_medians_with_their_ranges(self):
        text = step_table.step_table(ROWS, {"torch.distributed symmetric": "no symmetric pool"},
                                     2, "2 ranks share 1 GPU(s)")
        lines = text.splitlines()
        self.assertIn("| gaps | comm share |", lines[2])
        mine = next(line for line in lines if line.startswith("| 4 | symmcomm device counts"))
        cells = [c.strip() for c in mine.strip("|").split("|")]
        self.assertEqual(cells[2], "100.0 (90.0-130.0)")
        self.assertEqual(cells[4], "1.200")  # 120 / 100
        self.assertEqual(cells[7], "55.0 (40.0-70.0)")
        self.assertEqual(cells[9], "15.0")
        theirs = next(line for line in lines if line.startswith("| 4 | torch.distributed padded"))
        self.assertEqual([c.strip() for c in theirs.strip("|").split("|")][9], "-10.0")
        self.assertIn("torch.distributed symmetric: not measured (no symmetric pool)", text)

    def test_the_ceiling_is_the_base_step_over_the_step_less_its_communication(self):
        # torch.distributed padded: step 120, dispatch 30 and combine 40 -> 120 / 50.
        self.assertEqual(step_table.ceilings(ROWS), {4: 120.0 / 50.0})
        text = step_table.step_table(ROWS, {}, 2, "2 ranks share 1 GPU(s)")
        self.assertIn("tokens/rank: ceiling: 4: 2.400.", text)
        # Without the base way's rows there is nothing to bound.
        self.assertEqual(step_table.ceilings(ROWS[:1]), {})
        self.assertNotIn("Ceiling", step_table.step_table(ROWS[:1], {}, 2, "x"))

    def test_the_heading_names_the_expert_stand_in_where_the_run_stored_it(self):
        named = step_table.step_table(ROWS, {}, 2, "2 ranks share 1 GPU(s)", "BF16 grouped")
        self.assertIn("2 ranks (2 ranks share 1 GPU(s)). Experts: BF16 grouped. Step", named)
        bare = step_table.step_table(ROWS, {}, 2, "2 ranks share 1 GPU(s)")
        self.assertNotIn("Experts:", bare)

    def test_a_stored_run_is_tabled_again_beside_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "moe-step-n2.json")
            with open(path, "w") as f:
                json.dump({"meta": {"ranks": 2, "sharing": "2 ranks share 1 GPU(s)",
                                    "unavailable": {}}, "results": ROWS}, f)
            self.assertEqual(step_table.main(["step_table.py", path]), 0)
            with open(os.path.join(d, "moe-step-n2-phases.md")) as f:
                written = f.read()
            self.assertEqual(written, step_table.step_table(ROWS, {}, 2, "2 ranks share 1 GPU(s)")
                             + "\n")
            self.assertEqual(step_table.main(["step_table.py", "moe-step-n2.md"]), 2)


if __name__ == "__main__":
    unittest.main()
