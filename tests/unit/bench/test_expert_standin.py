"""bench/python/expert_standin.py on the CPU at a small shape: both forms of the expert FFN (packed
rows through a grouped matmul, the masked layout through bmm) give every token the sum over its
top-k of weight x FFN_e(token) for this rank's experts, drop the same pairs past `cap`, and the
grouped form hands its matmul the experts' row offsets (an unchosen expert: a group of no rows).
Exit 77 (skipped) without PyTorch: scripts/check_torch_ops_cpu.sh runs it with Debian's."""
import os
import sys
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIPPED: PyTorch is not installed (Debian: python3-torch; "
          "scripts/check_torch_ops_cpu.sh installs it and runs this test)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "python"))
import expert_standin as es  # noqa: E402

SMALL = es.Shape(hidden=64, experts=16, top_k=4, groups=4, top_groups=2, intermediate=32)


def reference(experts, valid):
    """Token by token in fp32: sum over its top-k pairs of this rank's kept experts."""
    ids, weights = experts.route(valid)
    slot, kept = experts.place(ids, valid)
    kept = kept.view(experts.rows, -1)
    x = experts.tokens.float()
    y = torch.zeros(experts.rows, SMALL.hidden)
    for t in range(experts.rows):
        for k in range(SMALL.top_k):
            if not kept[t, k]:
                continue
            e = int(ids[t, k]) - experts.first
            h = F.silu(x[t] @ experts.w1[e].float())
            y[t] += float(weights[t, k]) * (h @ experts.w2[e].float())
    return y


class ExpertStandIn(unittest.TestCase):
    def make(self, form, rows, rank=0, world=2, matmul=es.grouped_mm_reference, seed=0):
        weights = es.Weights(SMALL, rank, world, device="cpu")
        experts = es.Experts(weights, rows, form, matmul)
        g = torch.Generator().manual_seed(seed)
        experts.tokens.copy_(torch.randn(rows, SMALL.hidden, generator=g).to(torch.bfloat16))
        valid = torch.ones(rows, dtype=torch.bfloat16)
        valid[rows - 3:] = 0  # padding rows: never routed
        return experts, valid

    def run_form(self, form, rows, **kw):
        experts, valid = self.make(form, rows, **kw)
        y = torch.empty(rows, SMALL.hidden, dtype=torch.bfloat16)
        experts.run(valid, y)
        return experts, valid, y

    def test_both_forms_match_the_token_by_token_reference(self):
        for form in es.FORMS:
            for rank in (0, 1):
                with self.subTest(form=form, rank=rank):
                    experts, valid, y = self.run_form(form, 24, rank=rank)
                    want = reference(experts, valid)
                    self.assertTrue(torch.isfinite(y.float()).all())
                    err = (y.float() - want).norm() / want.norm()
                    self.assertLess(float(err), 2e-2)
                    self.assertTrue(torch.equal(y[21:].float(), torch.zeros(3, SMALL.hidden)))

    def test_the_forms_drop_the_same_pairs_past_cap(self):
        # One rank holds every expert; 197 token rows of one token all pick the same 4 experts,
        # each past cap = 2 x 200 x 4 / 16 = 100 rows: rows 100-196 lose all their pairs.
        for form in es.FORMS:
            with self.subTest(form=form):
                experts, valid = self.make(form, 200, world=1)
                experts.tokens.copy_(experts.tokens[:1].expand(200, -1))
                y = torch.empty(200, SMALL.hidden, dtype=torch.bfloat16)
                experts.run(valid, y)
                self.assertEqual(experts.cap, 100)
                self.assertEqual(int(experts.dropped), SMALL.top_k * (197 - 100))
                want = reference(experts, valid)[0]
                worst = (y[:100].float() - want).norm(dim=1).max()  # every kept row is token 0's
                self.assertLess(float(worst / want.norm()), 2e-2)
                self.assertTrue(torch.equal(y[100:].float(), torch.zeros(100, SMALL.hidden)))

    def test_the_grouped_matmul_gets_each_experts_kept_rows_as_a_group(self):
        seen = []

        def spy(a, b, offs):
            seen.append((a.shape[0], b.shape[0], offs.clone()))
            return es.grouped_mm_reference(a, b, offs)

        experts, valid, _ = self.run_form("grouped", 5, matmul=spy)
        ids, _ = experts.route(valid)
        local = (ids - experts.first)[:2]  # the 2 token rows (3 of 5 are padding)
        mine = local[(local >= 0) & (local < experts.local)]
        counts = torch.bincount(mine, minlength=experts.local)
        self.assertEqual(len(seen), 2)  # one matmul per FFN layer, on the same offsets
        for m, groups, offs in seen:
            self.assertEqual((m, groups), (experts.local * experts.cap, experts.local))
            self.assertTrue(torch.equal(offs.long(), counts.cumsum(0)))
        self.assertTrue((counts == 0).any())  # some experts are groups of no rows

    def test_an_unknown_form_is_refused_by_name(self):
        weights = es.Weights(SMALL, 0, 2, device="cpu")
        with self.assertRaisesRegex(ValueError, "form must be one of .*'masked'"):
            es.Experts(weights, 4, "masked")

    def test_the_probe_says_why_the_grouped_form_cannot_run(self):
        why = es.grouped_unavailable("cpu")
        if hasattr(torch, "_grouped_mm"):
            self.assertTrue(why is None or why.startswith("torch._grouped_mm"), why)
        else:
            self.assertIn("torch._grouped_mm is missing", why)


if __name__ == "__main__":
    unittest.main()
