"""The commands of `python -m cmlm`, one module each.

Every module defines only its own flags (`flag_parsing.command_flags()`) and
a `main(argv)` that parses the arguments after the command's name and calls
typed library functions; no library module reads a flags object.
"""
# command name -> module of this package
COMMANDS = {
    "train": "train",
    "demo": "demo",
    "vocab": "vocab",
    "ngrams": "ngrams",
    "stages": "stages",
    "pcr": "pcr",
    "export": "export",
    "encode": "encode",
    "import": "import_model",
    "eval": "eval",
}
