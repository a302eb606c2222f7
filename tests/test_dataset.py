"""Dataset files and synthetic inputs: loading, validation messages, batching, calibration."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends._base import TensorSpec
from gptuner_core.dataset import DEFAULT_DYNAMIC_DIM
from gptuner_core.dataset import Dataset
from gptuner_core.dataset import from_arrays
from gptuner_core.dataset import load_dataset
from gptuner_core.dataset import numpy_dtype
from gptuner_core.dataset import synthesize
from gptuner_core.dataset import validate_batch_size
from gptuner_core.errors import DatasetError
from gptuner_core.errors import GptunerError


IMAGE = TensorSpec(name="image", dtype="float32", shape=("batch", 3, 4, 4))
IDS = TensorSpec(name="input_ids", dtype="int64", shape=(None, "seq"))
MASK = TensorSpec(name="mask", dtype="bool", shape=("batch", "seq"))


def _save(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def _good(tmp_path: Path, rows: int = 10, with_labels: bool = True) -> Path:
    rng = np.random.default_rng(1)
    arrays = {
        "image": rng.standard_normal((rows, 3, 4, 4)),  # float64 on disk, cast to float32
        "input_ids": rng.integers(0, 100, size=(rows, 7)).astype(np.int32),
        "mask": np.ones((rows, 7), dtype=np.int8),
    }
    if with_labels:
        arrays["labels"] = np.arange(rows) % 3
    return _save(tmp_path / "data.npz", **arrays)


SPECS = [IMAGE, IDS, MASK]


class TestLoad:
    """Loading a valid file."""

    def test_load_casts_and_keeps_labels(self, tmp_path: Path) -> None:
        """Arrays are cast to the model dtypes, labels kept apart, rows counted."""
        path = _good(tmp_path)
        ds = load_dataset(path, SPECS)
        assert isinstance(ds, Dataset)
        assert ds.n_rows == 10
        assert ds.source == str(path)
        assert not ds.synthetic
        assert list(ds.inputs) == ["image", "input_ids", "mask"]
        assert ds.inputs["image"].dtype == np.float32
        assert ds.inputs["input_ids"].dtype == np.int64
        assert ds.inputs["mask"].dtype == np.bool_
        with np.load(path) as raw:
            np.testing.assert_array_equal(ds.inputs["input_ids"], raw["input_ids"])
            np.testing.assert_allclose(ds.inputs["image"], raw["image"], rtol=1e-6)
        np.testing.assert_array_equal(ds.labels, np.arange(10) % 3)

    def test_without_labels(self, tmp_path: Path) -> None:
        assert load_dataset(_good(tmp_path, with_labels=False), SPECS).labels is None

    def test_model_input_named_labels(self, tmp_path: Path) -> None:
        """A model input called 'labels' is an input, not the labels."""
        spec = TensorSpec(name="labels", dtype="int64", shape=(None,))
        ds = load_dataset(_save(tmp_path / "d.npz", labels=np.arange(4)), [spec])
        assert ds.labels is None
        assert list(ds.inputs) == ["labels"]

    def test_batches_head_calibration(self, tmp_path: Path) -> None:
        """batches() covers every row in order; head() is the first batch; calibration spreads."""
        ds = load_dataset(_good(tmp_path), SPECS)
        batches = list(ds.batches(4))
        assert [len(b["image"]) for b in batches] == [4, 4, 2]
        np.testing.assert_array_equal(
            np.concatenate([b["input_ids"] for b in batches]), ds.inputs["input_ids"]
        )
        head = ds.head(3)
        assert set(head) == set(ds.inputs)
        np.testing.assert_array_equal(head["image"], ds.inputs["image"][:3])
        calib = ds.calibration(4)
        np.testing.assert_array_equal(calib["input_ids"], ds.inputs["input_ids"][[0, 3, 6, 9]])
        assert ds.calibration(100)["image"].shape[0] == 10
        with pytest.raises(DatasetError, match="batch size 11 is larger than dataset .*\\(10 rows\\)"):
            ds.head(11)
        with pytest.raises(DatasetError, match="batch size must be an int >= 1 \\(got 0\\)"):
            list(ds.batches(0))
        with pytest.raises(DatasetError, match="calibration rows must be an int >= 1"):
            ds.calibration(0)


class TestValidation:
    """Every mismatch names the file, the input, expected and found."""

    def test_missing_and_extra(self, tmp_path: Path) -> None:
        path = _save(tmp_path / "d.npz", image=np.zeros((2, 3, 4, 4)), junk=np.zeros(2))
        with pytest.raises(DatasetError) as info:
            load_dataset(path, SPECS)
        assert str(info.value) == (
            f"dataset '{path}': missing input(s) ['input_ids', 'mask'] and unexpected "
            "array(s) ['junk'] (model inputs: ['image', 'input_ids', 'mask']; found arrays: "
            "['image', 'junk']; an optional 'labels' array holds labels)"
        )

    def test_wrong_rank(self, tmp_path: Path) -> None:
        path = _save(tmp_path / "d.npz", image=np.zeros((2, 3, 16)))
        with pytest.raises(DatasetError) as info:
            load_dataset(path, [IMAGE])
        assert str(info.value) == (
            f"dataset '{path}': input 'image' has shape (2, 3, 16) (rank 3), expected rank 4 "
            "(batch, 3, 4, 4)"
        )

    def test_fixed_dimension_mismatch(self, tmp_path: Path) -> None:
        path = _save(tmp_path / "d.npz", image=np.zeros((2, 3, 4, 5)))
        with pytest.raises(DatasetError) as info:
            load_dataset(path, [IMAGE])
        assert str(info.value) == (
            f"dataset '{path}': input 'image' has shape (2, 3, 4, 5), expected (batch, 3, 4, 4) "
            "(axis 3: expected 4, found 5)"
        )

    def test_fixed_first_dimension(self) -> None:
        """A fixed batch of 2 takes rows in multiples of 2."""
        spec = TensorSpec(name="x", dtype="float32", shape=(2, 3))
        assert from_arrays({"x": np.zeros((4, 3))}, [spec]).n_rows == 4
        with pytest.raises(DatasetError, match="has 3 row\\(s\\) along axis 0; the model's first dimension is fixed at 2"):
            from_arrays({"x": np.zeros((3, 3))}, [spec], source="s.npz")

    def test_row_count_and_symbolic_dims(self) -> None:
        """Inputs need equal rows; a symbolic dimension needs one size across inputs."""
        with pytest.raises(DatasetError, match="input 'mask' has 3 row\\(s\\) along axis 0, input 'input_ids' has 2"):
            from_arrays({"input_ids": np.zeros((2, 5), int), "mask": np.zeros((3, 5), bool)}, [IDS, MASK])
        with pytest.raises(DatasetError, match="dimension 'seq' is 5 in input 'input_ids' but 6 in input 'mask' \\(axis 1\\)"):
            from_arrays({"input_ids": np.zeros((2, 5), int), "mask": np.zeros((2, 6), bool)}, [IDS, MASK])

    def test_dtype_casts(self) -> None:
        """Lossless or same-kind casts pass; lossy int casts and float overflow are refused."""
        spec_i = TensorSpec(name="x", dtype="int32", shape=(None,))
        assert from_arrays({"x": np.array([1.0, 2.0])}, [spec_i]).inputs["x"].dtype == np.int32
        with pytest.raises(DatasetError, match="input 'x' has dtype float64, expected int32: values cannot be cast"):
            from_arrays({"x": np.array([1.5, 2.0])}, [spec_i])
        with pytest.raises(DatasetError, match="values cannot be cast"):
            from_arrays({"x": np.array([2**40])}, [spec_i])
        spec_b = TensorSpec(name="x", dtype="bool", shape=(None,))
        assert from_arrays({"x": np.array([0, 1])}, [spec_b]).inputs["x"].dtype == np.bool_
        with pytest.raises(DatasetError, match="expected bool"):
            from_arrays({"x": np.array([0, 2])}, [spec_b])
        spec_h = TensorSpec(name="x", dtype="float16", shape=(None,))
        with pytest.raises(DatasetError, match="1 value\\(s\\) overflow float16"):
            from_arrays({"x": np.array([1.0, 1e6])}, [spec_h])
        with pytest.raises(DatasetError, match="dtype <U1 \\(expected a numeric or bool array\\)"):
            from_arrays({"x": np.array(["a"])}, [spec_h])

    def test_labels_validation(self) -> None:
        spec = TensorSpec(name="x", dtype="float32", shape=(None, 2))
        with pytest.raises(DatasetError, match="'labels' has shape \\(3,\\), expected one entry per row \\(2 rows"):
            from_arrays({"x": np.zeros((2, 2))}, [spec], labels=np.zeros(3))

    def test_zero_rows(self) -> None:
        spec = TensorSpec(name="x", dtype="float32", shape=(None, 2))
        with pytest.raises(DatasetError, match="0 rows"):
            from_arrays({"x": np.zeros((0, 2))}, [spec])

    def test_batch_size_against_fixed_batch(self) -> None:
        validate_batch_size([IMAGE, IDS], 8)
        with pytest.raises(DatasetError, match="batch size 4 does not fit model input 'x', whose first dimension is fixed at 1"):
            validate_batch_size([TensorSpec(name="x", dtype="float32", shape=(1, 3))], 4)


class TestBadFiles:
    """Files that are not usable datasets raise DatasetError naming the file."""

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(DatasetError, match=f"dataset file '{tmp_path / 'nope.npz'}' not found"):
            load_dataset(tmp_path / "nope.npz", SPECS)

    def test_not_an_npz(self, tmp_path: Path) -> None:
        path = tmp_path / "text.npz"
        path.write_text("name,value\n1,2\n")
        with pytest.raises(DatasetError, match=f"dataset '{path}' is not an .npz archive"):
            load_dataset(path, SPECS)

    def test_pickle_file_is_not_loaded(self, tmp_path: Path) -> None:
        """A pickle is refused, never unpickled (its payload would create a marker file)."""
        marker = tmp_path / "pwned"

        class Evil:
            def __reduce__(self):
                return (Path.touch, (marker,))

        path = tmp_path / "evil.npz"
        path.write_bytes(pickle.dumps(Evil()))
        with pytest.raises(DatasetError, match="is not an .npz archive"):
            load_dataset(path, SPECS)
        assert not marker.exists()

    def test_object_array(self, tmp_path: Path) -> None:
        path = _save(tmp_path / "obj.npz", image=np.array([{"a": 1}], dtype=object))
        with pytest.raises(DatasetError) as info:
            load_dataset(path, [IMAGE])
        assert str(info.value) == (
            f"dataset '{path}': array 'image' holds Python objects (pickled); datasets are "
            "loaded with allow_pickle=False, save numeric arrays"
        )

    def test_truncated(self, tmp_path: Path) -> None:
        path = _good(tmp_path, rows=200)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(DatasetError, match=f"dataset '{path}' cannot be read: .*truncated"):
            load_dataset(path, SPECS)

    def test_corrupt_member(self, tmp_path: Path) -> None:
        """A damaged compressed member is reported with its name."""
        path = tmp_path / "c.npz"
        np.savez_compressed(path, image=np.random.default_rng(0).random((50, 3, 4, 4)))
        raw = bytearray(path.read_bytes())
        raw[600:700] = bytes(100)
        path.write_bytes(bytes(raw))
        with pytest.raises(DatasetError, match=f"dataset '{path}': array 'image' cannot be read"):
            load_dataset(path, [IMAGE])

    def test_single_npy_and_empty(self, tmp_path: Path) -> None:
        npy = tmp_path / "a.npy"
        np.save(npy, np.zeros(3))
        with pytest.raises(DatasetError, match="holds a single .npy array"):
            load_dataset(npy, SPECS)
        empty = tmp_path / "empty.npz"
        np.savez(empty)
        with pytest.raises(DatasetError, match="contains no arrays"):
            load_dataset(empty, SPECS)

    def test_errors_are_gptuner_errors(self, tmp_path: Path) -> None:
        assert issubclass(DatasetError, GptunerError)
        assert issubclass(DatasetError, ValueError)


class TestSynthesize:
    """Synthetic inputs for models without a dataset."""

    def test_shapes_dtypes_ranges(self) -> None:
        """Rows on axis 0, dynamic dims from dims= or the default, ints small, bools bool."""
        ds = synthesize(SPECS, 5, seed=3, dims={"seq": 12})
        assert ds.synthetic
        assert ds.source == "synthetic(n=5, seed=3)"
        assert ds.labels is None
        assert ds.inputs["image"].shape == (5, 3, 4, 4)
        assert ds.inputs["image"].dtype == np.float32
        assert ds.inputs["input_ids"].shape == (5, 12)
        assert ds.inputs["input_ids"].dtype == np.int64
        assert 0 <= ds.inputs["input_ids"].min() and ds.inputs["input_ids"].max() < 10
        assert ds.inputs["mask"].dtype == np.bool_
        unnamed = TensorSpec(name="x", dtype="float16", shape=(None, None))
        assert synthesize([unnamed], 2).inputs["x"].shape == (2, DEFAULT_DYNAMIC_DIM)

    def test_deterministic_by_seed(self) -> None:
        a = synthesize(SPECS, 4, seed=7)
        b = synthesize(SPECS, 4, seed=7)
        c = synthesize(SPECS, 4, seed=8)
        np.testing.assert_array_equal(a.inputs["image"], b.inputs["image"])
        assert not np.array_equal(a.inputs["image"], c.inputs["image"])
        assert abs(float(synthesize([IMAGE], 64).inputs["image"].std()) - 1.0) < 0.1

    def test_fixed_batch_rounds_rows(self) -> None:
        spec = TensorSpec(name="x", dtype="tensor(float)", shape=(4, 2))
        ds = synthesize([spec], 5)
        assert ds.n_rows == 8
        assert ds.inputs["x"].dtype == np.float32
        assert [len(b["x"]) for b in ds.batches(4)] == [4, 4]

    def test_unsupported(self) -> None:
        with pytest.raises(DatasetError, match="cannot synthesize model input 's' of dtype 'string'"):
            synthesize([TensorSpec(name="s", dtype="string", shape=(None,))], 2)
        with pytest.raises(DatasetError, match="synthetic rows must be an int >= 1"):
            synthesize(SPECS, 0)
        with pytest.raises(DatasetError, match="dynamic dimension 'seq' must be an int >= 1"):
            synthesize(SPECS, 1, dims={"seq": 0})


def test_numpy_dtype_names() -> None:
    """Backend dtype spellings map to numpy dtypes; unknown ones to None."""
    assert numpy_dtype("float32") == np.float32
    assert numpy_dtype("tensor(float)") == np.float32
    assert numpy_dtype("tensor(int64)") == np.int64
    assert numpy_dtype("torch.float16") == np.float16
    assert numpy_dtype("half") == np.float16
    assert numpy_dtype("bfloat16") == np.float32
    assert numpy_dtype("bool") == np.bool_
    assert numpy_dtype("string") is None
    assert numpy_dtype("tensor(string)") is None


# -- real models' inputs: per-input batch axes, fixed inputs, shapes, value ranges ------------
SILERO = [
    TensorSpec(name="input", dtype="float32", shape=(None, None)),
    TensorSpec(name="state", dtype="float32", shape=(2, None, 128)),
    TensorSpec(name="sr", dtype="int64", shape=()),
]


class TestPerInputBatchAxes:
    """silero VAD: state [2, B, 128] is batched along axis 1, sr is an int64 scalar."""

    def test_state_and_scalar_load_and_batch(self, tmp_path: Path) -> None:
        """A dataset with state rows on axis 1 and a scalar sr loads; batches slice state on axis 1."""
        path = _save(
            tmp_path / "vad.npz", input=np.zeros((6, 576), np.float32),
            state=np.zeros((2, 6, 128), np.float32), sr=np.array(16000), labels=np.arange(6) % 2,
        )
        ds = load_dataset(path, SILERO)
        assert ds.n_rows == 6
        assert ds.batch_axes == {"input": 0, "state": 1, "sr": None}
        feeds = list(ds.batches(4))
        assert [f["state"].shape for f in feeds] == [(2, 4, 128), (2, 2, 128)]
        assert [f["input"].shape for f in feeds] == [(4, 576), (2, 576)]
        assert all(f["sr"].shape == () and int(f["sr"]) == 16000 for f in feeds)
        assert ds.head(3)["state"].shape == (2, 3, 128)
        calib = ds.calibration(3)
        assert calib["state"].shape == (2, 3, 128) and calib["sr"].shape == ()

    def test_batch_size_two_is_not_advised_for_state(self) -> None:
        """The fixed 2 of state's axis 0 is not a batch dimension: any batch size fits."""
        validate_batch_size(SILERO, 8)

    def test_synthesized_with_ranges_and_shapes(self) -> None:
        """Synthetic silero inputs: sr constant 16000, input 576 samples in [-1, 1)."""
        from gptuner_core.shapes import input_specs
        from gptuner_core.shapes import parse_shapes
        from gptuner_core.shapes import parse_value_ranges

        specs = input_specs(
            SILERO, value_ranges=parse_value_ranges("sr:16000,input:-1..1"),
            shapes=parse_shapes("input:1x576"),
        )
        ds = synthesize(specs, 5)
        assert ds.inputs["input"].shape == (5, 576)
        assert -1 <= ds.inputs["input"].min() and ds.inputs["input"].max() < 1
        assert ds.inputs["state"].shape == (2, 5, 128)
        assert ds.inputs["sr"].shape == () and int(ds.inputs["sr"]) == 16000
        assert "synthetic" in ds.describe() and "sr int64 () = 16000" in ds.describe()

    def test_integer_ids_in_range(self) -> None:
        """Token ids drawn from the vocabulary range the user gives."""
        from gptuner_core.shapes import input_specs
        from gptuner_core.shapes import parse_value_ranges

        specs = input_specs([IDS], value_ranges=parse_value_ranges("input_ids:100..30522"))
        ids = synthesize(specs, 64, dims={"seq": 32}).inputs["input_ids"]
        assert ids.min() >= 100 and ids.max() < 30522 and ids.max() > 1000

    def test_explicit_batch_axis_override(self) -> None:
        """batch axes given by the user win over the defaults; errors name the input."""
        from gptuner_core.shapes import input_specs

        specs = input_specs(SILERO, batch_axes={"state": None})
        ds = from_arrays(
            {"input": np.zeros((3, 8)), "state": np.zeros((2, 1, 128)), "sr": np.array(8000)}, specs
        )
        assert ds.batch_axes["state"] is None and ds.n_rows == 3
        with pytest.raises(DatasetError, match=r"batch axis 3 of input 'state' is beyond its rank 3"):
            input_specs(SILERO, batch_axes={"state": 3})
        with pytest.raises(DatasetError, match=r"not model inputs \(model inputs: \['input', 'state', 'sr'\]\)"):
            input_specs(SILERO, batch_axes={"states": 1})

    def test_state_rows_must_match(self) -> None:
        """state's rows along axis 1 must equal input's rows."""
        with pytest.raises(DatasetError, match=r"input 'state' has 5 row\(s\) along axis 1, input 'input' has 6"):
            from_arrays(
                {"input": np.zeros((6, 8)), "state": np.zeros((2, 5, 128)), "sr": np.array(1)}, SILERO
            )


class TestBatchSizeBeyondDataset:
    """A batch size larger than the dataset is refused with both sizes."""

    def test_refused_with_sizes(self, tmp_path: Path) -> None:
        ds = load_dataset(_good(tmp_path, rows=10), SPECS)
        with pytest.raises(DatasetError, match=r"batch size 16 is larger than dataset '.*data.npz' \(10 rows\)"):
            validate_batch_size(SPECS, 16, dataset=ds)
        validate_batch_size(SPECS, 10, dataset=ds)


def test_feed_at_given_shapes() -> None:
    """A latency feed at exactly the shapes of one profile entry (several shapes per study)."""
    from gptuner_core.dataset import feed_at_shapes
    from gptuner_core.shapes import parse_shapes
    from gptuner_core.shapes import parse_value_ranges

    feed = feed_at_shapes(
        [IDS, MASK], parse_shapes("input_ids:4x128,mask:4x128"),
        value_ranges=parse_value_ranges("input_ids:0..30522"),
    )
    assert feed["input_ids"].shape == (4, 128) and feed["mask"].shape == (4, 128)
    assert feed["input_ids"].max() > 10
    with pytest.raises(DatasetError, match=r"no shape given for input\(s\) \['mask'\]"):
        feed_at_shapes([IDS, MASK], parse_shapes("input_ids:4x128"))
