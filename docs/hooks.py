"""mkdocs hook: the site shows the repository's Markdown where it lives.

The README (the site's home page), BUILD.md, CHANGELOG.md and each project's README
(`projects/<name>/README.md`) stay where a reader of the repository finds
them; this hook adds them to the site instead of copying them into docs/:

  README.md                  -> index.md
  BUILD.md                   -> build.md
  CHANGELOG.md               -> changelog.md
  projects/<name>/README.md  -> projects/<name>/README.md (its index page)
  docs/<page>.md             -> <page>.md

Every page is written with links relative to its place in the repository
(`docs/training.md` from the README, `../../docs/training.md` from a
project's README), as GitHub resolves them; `on_page_markdown` rewrites each
such link to the target's place in the site. A link to a file that is not a
page is left as it is, so `mkdocs build --strict` reports it.

The nav entry `Projects: projects/*/README.md` in mkdocs.yml is expanded to
every project's README, so a new project folder appears without editing the
nav (and a deleted one disappears).

The Python API page (docs/api.md) is rendered by mkdocstrings from the
sources, read without importing them. A checkout keeps the layers beside
cmlm/ (`modeling/`, `training/`, ...), which only an import makes
`cmlm.modeling`, ...; `on_startup` lays out `build/api_source/cmlm/` as the
wheel does (setup.py's `package_dir`, from cmlm/layering.py), in symbolic
links, and mkdocs.yml points mkdocstrings there.
"""
import glob
import os
import posixpath
import re
import runpy
import shutil

from mkdocs.structure.files import File

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECTS_GLOB = "projects/*/README.md"
# [text](target) and [text](target "title"); images alike.
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def repository_pages():
  """{repository path: site path} of the pages that live outside docs/."""
  pages = {"README.md": "index.md", "BUILD.md": "build.md",
           "CHANGELOG.md": "changelog.md"}
  for path in sorted(glob.glob(os.path.join(ROOT, PROJECTS_GLOB))):
    relative = os.path.relpath(path, ROOT).replace(os.sep, "/")
    pages[relative] = relative
  return pages


def site_path(repository_path):
  """Where a repository file is in the site, or None if it is no page."""
  pages = repository_pages()
  if repository_path in pages:
    return pages[repository_path]
  if repository_path.startswith("docs/"):
    return repository_path[len("docs/"):]
  return None


def repository_path(site_uri):
  """Where a page of the site lives in the repository."""
  for repository, site in repository_pages().items():
    if site == site_uri:
      return repository
  return "docs/" + site_uri


def rewrite_link(target, page_repository_path, page_site_path):
  """`target`, written relative to the page's place in the repository, made
  relative to its place in the site."""
  if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
    return target
  path, hash_mark, anchor = target.partition("#")
  resolved = posixpath.normpath(
      posixpath.join(posixpath.dirname(page_repository_path), path))
  site = site_path(resolved)
  if site is None:
    return target
  relative = posixpath.relpath(site, posixpath.dirname(page_site_path) or ".")
  return relative + hash_mark + anchor


API_SOURCE = os.path.join(ROOT, "build", "api_source")


def lay_out_api_source(root=ROOT, target=API_SOURCE):
  """`target`/cmlm: the package as the wheel installs it, in links to
  `root`'s folders (cmlm/'s entries, and each layer of setup.py's
  `package_dir`: cmlm/layering.py's, read by path as setup.py reads it)."""
  package_dirs = runpy.run_path(
      os.path.join(root, "cmlm", "layering.py"))["package_dir"]()
  package = os.path.join(target, "cmlm")
  shutil.rmtree(target, ignore_errors=True)
  os.makedirs(package)
  links = {name: os.path.join(root, "cmlm", name)
           for name in os.listdir(os.path.join(root, "cmlm"))
           if name != "__pycache__"}
  for name, folder in package_dirs.items():
    if name.startswith("cmlm."):
      links[name[len("cmlm."):]] = os.path.join(root, folder)
  for name, source in links.items():
    os.symlink(source, os.path.join(package, name))
  return target


def on_startup(command, dirty):
  # Before any plugin's `config` event: mkdocstrings drops search paths
  # that do not exist when it reads its config.
  del command, dirty
  lay_out_api_source()


def on_config(config):
  nav = config.get("nav") or []
  for entry in nav:
    if isinstance(entry, dict):
      for title, value in entry.items():
        if value == PROJECTS_GLOB:
          entry[title] = [site for repository, site in
                          repository_pages().items()
                          if repository.startswith("projects/")]
  return config


def on_files(files, config):
  for repository, site in repository_pages().items():
    files.append(File.generated(config, site,
                                abs_src_path=os.path.join(ROOT, repository)))
  return files


def on_page_markdown(markdown, page, config, files):
  del config, files
  site = page.file.src_uri
  repository = repository_path(site)
  return LINK.sub(
      lambda m: m.group(1) + rewrite_link(m.group(2), repository, site)
      + m.group(3), markdown)
