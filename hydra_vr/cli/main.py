"""The ``hydra-vr`` command. Sub-commands live in their own modules and are added here."""

from __future__ import annotations

import logging

import typer

from hydra_vr.cli.ask_cmd import ask, ground, strategies
from hydra_vr.cli.compare_cmd import COMPARE_HELP, compare_command
from hydra_vr.cli.eval_cmd import EVAL_HELP, eval_command
from hydra_vr.cli.record_cmd import RECORD_HELP, record_command
from hydra_vr.cli.serve_cmd import SERVE_HELP, serve_command
from hydra_vr.cli.tools_cmd import tools
from hydra_vr.cli.train_cmd import EXPORT_HELP, TRAIN_HELP, export_command, train_command

app = typer.Typer(
    name="hydra-vr",
    help="Compositional visual reasoning: answer questions about images and ground expressions to boxes "
    "with an LLM planner, a controller, generated programs and real vision tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("ask", help="Answer a question about an image with the reasoning loop.")(ask)
app.command("ground", help="Ground a referring expression to a box with the reasoning loop.")(ground)
app.command("strategies", help="List the agent strategies (--strategy NAME) with one line each and their options.")(strategies)
app.command("tools", help="Run vision tools on one image: find objects, read text, classify, colours, depth, VQA.")(tools)
app.command("eval", help=EVAL_HELP)(eval_command)
app.command("compare", help=COMPARE_HELP)(compare_command)
app.command("record", help=RECORD_HELP)(record_command)
app.command("train-controller", help=TRAIN_HELP)(train_command)
app.command("export-controller", help=EXPORT_HELP)(export_command)
app.command("serve", help=SERVE_HELP)(serve_command)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log model loading and tool decisions.")) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


if __name__ == "__main__":
    app()
