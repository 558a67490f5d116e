"""ent.py with a preset as the base: ent9.py LEVEL FILES "{'overrides':..}" TAG"""
import ast, dataclasses, os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from nncompress.presets import params_for_level
base = dataclasses.asdict(params_for_level(int(sys.argv[1])))
base.update(ast.literal_eval(sys.argv[3]) if len(sys.argv) > 3 else {})
os.execv(sys.executable, [sys.executable, os.path.join(os.path.dirname(__file__), 'ent.py'), sys.argv[2], repr(base)] + sys.argv[4:])
