"""kscope's Python modules.

kscope.predict describes a kernel as tensors and instructions and predicts
its time on a chip model (docs/predict.md, "Python").  It needs only the
standard library and kscope's libkscope-predict.so.
"""

__all__ = ["predict"]
