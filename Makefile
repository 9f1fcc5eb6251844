# make demo   compile and run three example kernels, checked against numpy
# make test   the whole test suite (slow cases excluded; `make test-slow` runs them)
# make bench  every benchmark in benchmarks/
# make fuzz   a differential fuzz campaign (FUZZ_PROGRAMS, FUZZ_TIME, FUZZ_SEED, FUZZ_JOBS)
# make clean  build outputs and caches of this checkout (keeps .venv; `make distclean` too)
#
# PYTHON picks the interpreter that creates .venv:  make demo PYTHON=python3.12

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.tilelang-installed

.PHONY: demo test test-slow bench fuzz clean distclean venv

venv: $(STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV)

# (re)install only when pyproject.toml is newer than the last install
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VPY) examples/demo.py

test: $(STAMP)
	$(VPY) -m pytest -q

test-slow: $(STAMP)
	$(VPY) -m pytest -q -m slow

bench: $(STAMP)
	@set -e; for b in benchmarks/*.py; do \
	  case $$b in benchmarks/common.py|benchmarks/*_child.py) continue;; esac; \
	  echo "== $$b"; $(VPY) $$b; done

FUZZ_PROGRAMS ?= 500
FUZZ_TIME ?= 3600
FUZZ_SEED ?= 0
FUZZ_JOBS ?= 2
fuzz: $(STAMP)
	$(VPY) -m tilelang.fuzz --programs $(FUZZ_PROGRAMS) --time $(FUZZ_TIME) \
	  --seed $(FUZZ_SEED) --jobs $(FUZZ_JOBS) $(FUZZ_ARGS)

clean:
	rm -rf build dist out .pytest_cache .hypothesis *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print | xargs rm -rf

distclean: clean
	rm -rf $(VENV)
