"""Other papers' methods on the core's seams, one folder each (Model Garden's
`official/projects/`): each has its README.md, its code, its experiments, its
evidence script and its tests, and registers itself in its
`registry_imports.py`, which `cmlm/registry_imports.py` imports. A project
imports the core and never another project; the core imports no project.
"""
