import subprocess
import sys


def test_importing_evalcore_does_not_import_streamlit():
    code = "import sys, evalcore; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
