"""``hydra-vr compare``: one table with a row per eval run directory."""

from __future__ import annotations

from pathlib import Path

import typer

from hydra_vr.cli.common import fail, print_json

COMPARE_HELP = (
    "Compare eval runs: one row per RUN_DIR (a folder made by hydra-vr eval --out) with its dataset, mode, "
    "strategy, samples, VQA accuracy, grounding Acc@0.5 and mIoU, the share of answers whose type does not fit "
    "the question, mean steps, LLM calls and prompt / generated tokens per sample, median seconds per sample "
    "and errors.\n\n"
    "Figures come from the same report code as report.md, over the stored predictions re-scored with the "
    "current scorer (nothing is written).\n\n"
    "--common keeps, in every row, only the samples all the runs finished: runs stopped at different points "
    "are then compared on the same questions.\n\n"
    "Example: hydra-vr compare runs/gqa-no_rl runs/gqa-vipergpt --common --markdown"
)


def compare_command(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories (hydra-vr eval --out).", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table (for a README)."),
    common: bool = typer.Option(False, "--common", help="Only the samples every run finished (fair when runs were cut short)."),
) -> None:
    from hydra_vr.eval.compare import compare_runs, render_markdown_table, shown_columns
    from hydra_vr.eval.report import format_cell
    from hydra_vr.eval.store import RunDirError

    if as_json and markdown:
        fail("choose one of --json and --markdown")
    try:
        rows = compare_runs(run_dirs, common=common)
    except RunDirError as exc:
        fail(str(exc))
    if as_json:
        print_json(rows)
        return
    if markdown:
        typer.echo(render_markdown_table(rows), nl=False)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="hydra-vr runs (scores x100)")
    for key, title in shown_columns(rows):
        table.add_column(title, justify="left" if key in ("run", "dataset", "mode", "strategy", "vqa_metric") else "right")
    for row in rows:
        table.add_row(*(format_cell(row.get(key)) for key, _ in shown_columns(rows)))
    Console().print(table)
