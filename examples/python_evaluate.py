"""The Python API on the bundled example (docs/python.md): evaluate the example candidate, then a
batch through a warm Evaluator with each candidate's training reward.

    /usr/bin/python3 examples/python_evaluate.py [--backend cpu] [--db PATH]

Needs `import openkernel`: after scripts/setup.sh it imports as is; otherwise put the build's
package folder first, e.g. PYTHONPATH=build/release/python.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import openkernel

HERE = Path(__file__).resolve().parent / "swish_chain"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None, help="cpu, cuda or triton (default: the GPU's)")
    parser.add_argument("--db", default=None, help="store (default: the user's)")
    args = parser.parse_args()
    quick = {"trials": 2, "timing_budget": 0.5}

    # One evaluation: paths, or source text.
    result = openkernel.evaluate(HERE / "candidate.py", HERE / "reference.py",
                                 backend=args.backend, db=args.db, **quick)
    print(f"example: {result.verdict}, speedup {result.speedup:.2f}x, "
          f"reward {openkernel.reward(result):.3f}")

    # A batch on one warm worker: the reference as text, the candidates as a path and as text:
    # the reference's own PyTorch code (rejected: no custom kernel, reward -1) and the same
    # without the clamp (incorrect, reward 0).
    reference = (HERE / "reference.py").read_text()
    plain = reference.replace("class Model(", "class ModelNew(")
    wrong = plain.replace("return torch.clamp(y, -1.0, 4.0)", "return y")
    with openkernel.Evaluator(backend=args.backend, db=args.db, **quick) as evaluator:
        batch = [HERE / "candidate.py", plain, wrong]
        for r in evaluator.evaluate_many(batch, reference=reference):
            print(f"batch: {r.verdict:<10} speedup {r.speedup or 0:.2f}x  "
                  f"reward {openkernel.reward(r)}  ({r.candidate_process} process)")


if __name__ == "__main__":
    main()
