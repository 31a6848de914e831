"""Train an audio classifier: `python train.py --mode=keras|estimator|tune [flags]`.

With no data flags it trains on the built-in synthetic dataset. Every flag is
defined in flags.py; `python train.py --help` lists them, grouped by concern.
Rerunning a command with the same --model_dir resumes it.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, logging  # noqa: E402
from absl import flags as absl_flags  # noqa: E402

import flags  # noqa: E402  (defines the flags)
from compat import training  # noqa: E402
from compat.fetch import FetchError  # noqa: E402
from compat.sources import DataSourceError  # noqa: E402

absl_flags.adopt_module_key_flags(flags)  # --help lists them


def main(argv: list[str]) -> None:
    try:
        run(argv)
    except (DataSourceError, FetchError) as error:  # the message says what to do: no traceback
        raise app.UsageError(str(error)) from error


def run(argv: list[str]) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
        configs = flags.configs_from_flags()
    except ValueError as error:
        raise app.UsageError(str(error)) from error
    os.makedirs(configs.model_dir, exist_ok=True)
    flags.save_flagfile(os.path.join(configs.model_dir, "flags.txt"))
    logging.info("Flags saved to %s/flags.txt; rerun with --flagfile to repeat this run", configs.model_dir)

    if configs.mode == "keras":
        metrics = training.train_and_evaluate(
            configs.source, configs.pipeline, configs.model, configs.train, configs.model_dir
        )
    elif configs.mode == "tune":
        from compat import tuning

        best_flags = os.path.join(configs.model_dir, "tuning", "best.flags")
        if configs.tune_target == "pipeline":
            best = tuning.tune_pipeline(configs.source, configs.pipeline, configs.explicit, configs.model_dir)
            summary = (f"fastest pipeline {best['values']}: {best['examples_per_second']:,.0f} examples/s "
                       f"against {best['autotune_examples_per_second']:,.0f} with AUTOTUNE defaults "
                       f"(report: {configs.model_dir}/tuning/pipeline.md)")
        else:
            best = tuning.search(configs.source, configs.pipeline, configs.model, configs.train, configs.tune,
                                 configs.explicit, configs.model_dir)
            if "worker" in best:
                print(f"tuning worker {best['worker']} finished; the chief writes the results")
                return
            summary = (f"best {configs.tune.objective} {best['score']:.4f} over {best['completed']} completed "
                       f"of {best['trials']} trials")
        flags.save_best_flagfile(best_flags, best["values"], os.path.join(configs.model_dir, "best"))
        print(f"{summary}; train it with: python train.py --flagfile={best_flags} --mode=keras")
        return
    elif configs.mode == "estimator":
        metrics = training.estimator_train_and_evaluate(
            configs.source, configs.pipeline, configs.model, configs.train, configs.model_dir
        )
    else:
        raise app.UsageError(f"--mode={configs.mode} is not available yet; use --mode=keras or estimator")
    print(f"test accuracy {metrics['test_accuracy']:.4f} (loss {metrics['test_loss']:.4f}) after "
          f"{metrics['steps']} steps in {metrics['wall_seconds']:.0f} s; outputs in {configs.model_dir}")


if __name__ == "__main__":
    app.run(main)
