"""Maintainers' scripts, each run as `python scripts/NAME.py`. A package so that the tests can import
scripts/serving.py, the page-driving helpers the scripts share with them (the scripts never import tests/)."""
