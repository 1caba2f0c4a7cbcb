# Sourced by the device scripts (run from the repository root there): installs the wheels
# carried in .whl into /tmp/site and points Python at them, the repository's src and the data
# carried in .gpudata.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 DPMINIMAX_DATA=$PWD/.gpudata
