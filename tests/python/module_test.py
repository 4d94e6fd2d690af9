"""The tensorsched Python module end to end: compile a zoo model exported by PyTorch (the
zoo_end_to_end fixture), load the artifact, run it on numpy arrays and match PyTorch's output;
misuse raises tensorsched.Error naming the input.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/module_test.py ZOO_DIR
"""
import os
import sys
import tempfile
import unittest

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import tensorsched

ZOO = sys.argv.pop(1) if len(sys.argv) > 1 else "build/zoo"
MODEL = "squeezenet1_0"


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


class ModuleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        data = os.path.join(ZOO, MODEL, "test_data_set_0")
        cls.x = read_pb(os.path.join(data, "input_0.pb"))
        cls.want = read_pb(os.path.join(data, "output_0.pb"))
        cls.manifest = tensorsched.compile(os.path.join(ZOO, MODEL, "model.onnx"), cls.tmp.name, name=MODEL,
                                           cache_dir=os.path.join(ZOO, "cache"), static_library=False)

    def test_compile_reports_what_it_wrote(self):
        self.assertTrue(os.path.exists(self.manifest["shared_library"]))
        self.assertEqual(self.manifest["static_library"], "")
        self.assertEqual(self.manifest["inputs"][0]["shape"], list(self.x.shape))
        self.assertGreater(len(self.manifest["workloads"]), 10)

    def test_runs_like_pytorch(self):
        m = tensorsched.Model(self.tmp.name)
        self.assertEqual(m.inputs, [{"name": "input", "shape": self.x.shape, "dtype": "float32"}])
        self.assertEqual(m.outputs[0]["shape"], self.want.shape)
        self.assertIn(tensorsched.__version__, m.version)
        m.set_threads(1)
        (got,) = m.run(self.x)
        self.assertEqual(got.dtype, np.float32)
        err = float(np.max(np.abs(got - self.want)))
        self.assertLessEqual(err, 1e-3 * float(np.max(np.abs(self.want))), err)
        (by_name,) = m(input=self.x)
        np.testing.assert_array_equal(by_name, got)
        # A non-contiguous view is copied, not misread.
        wide = np.zeros((1, 3, 224, 448), np.float32)
        wide[..., ::2] = self.x
        np.testing.assert_array_equal(m.run(wide[..., ::2])[0], got)

    def test_misuse_names_the_input(self):
        m = tensorsched.Model(self.manifest["shared_library"])
        with self.assertRaisesRegex(tensorsched.Error, "input 'input' has shape"):
            m.run(np.zeros((1, 3, 224, 223), np.float32))
        with self.assertRaisesRegex(tensorsched.Error, "input 'input' is float64"):
            m.run(self.x.astype(np.float64))
        with self.assertRaisesRegex(tensorsched.Error, "2 inputs given"):
            m.run(self.x, self.x)
        with self.assertRaisesRegex(tensorsched.Error, "no value for input 'input'"):
            m.run(image=self.x)
        with self.assertRaisesRegex(tensorsched.Error, "not a tensorsched artifact|cannot load"):
            tensorsched.Model("/nonexistent/libnothing.so")
        with self.assertRaisesRegex(tensorsched.Error, "exactly one budget"):
            tensorsched.tune(os.path.join(ZOO, MODEL, "model.onnx"), os.path.join(self.tmp.name, "r.db"))

    def test_tune_with_a_task_scheduler_returns_the_latency_curve(self):
        # A two-workload model (conv, then matmul) so the scheduler has a choice to make.
        w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
        m = numpy_helper.from_array(np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32), "m")
        graph = helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MatMul", ["r", "m"], ["y"])],
            "two_tasks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w, m])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(self.tmp.name, "two_tasks.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        cache = os.path.join(self.tmp.name, "tune_cache")
        s = tensorsched.tune(path, os.path.join(self.tmp.name, "t.db"), trials=2, scheduler="round-robin",
                             cache_dir=cache)
        self.assertEqual(s["scheduler"], "round-robin")
        self.assertGreaterEqual(len(s["tasks"]), 2)
        self.assertGreaterEqual(len(s["curve"]), 2)  # the defaults, then one point per slot
        seconds = [c[0] for c in s["curve"]]
        self.assertEqual(seconds, sorted(seconds))
        self.assertTrue(all(c[1] > 0 for c in s["curve"]))
        with self.assertRaisesRegex(tensorsched.Error, "no task scheduler 'fifo'"):
            tensorsched.tune(path, os.path.join(self.tmp.name, "t.db"), trials=2, scheduler="fifo", cache_dir=cache)


if __name__ == "__main__":
    unittest.main()
