"""``caldera validate``: decode, default and validate manifests without a server."""

from __future__ import annotations

import argparse

NAME = "validate"
HELP = "check manifests (files, directories or -) and print them after defaulting, or every error"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                        help="manifest file, directory (recursively *.yaml/*.yml/*.json) or - for stdin; repeatable")
    parser.add_argument("-o", "--output", choices=["yaml", "json", "name"], default="name",
                        help="print each object after defaulting in this format (default: one line per object)")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("validate is being built")
