import os
import tempfile

os.environ.setdefault("TVM_NUM_THREADS", "2")
# Never let a user's tuning database steer the tests' tile choices.
os.environ["MEGAFUSE_TUNING_DB"] = os.path.join(tempfile.mkdtemp(prefix="megafuse-test-db-"), "tuning.jsonl")
