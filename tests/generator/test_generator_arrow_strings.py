import json

import pyarrow as pa

from profile_store.generator.arrow_strings import json_object


def test_json_object_keeps_rows_whose_fragments_are_all_absent() -> None:
    # pyarrow's skip-nulls join drops such rows; json_object must not.
    first = pa.array(['"a":"1"', None, None], type=pa.string())
    second = pa.array([None, None, '"b":"x\\"y"'], type=pa.string())
    objects = json_object([first, second]).to_pylist()
    assert [json.loads(text) for text in objects] == [{"a": "1"}, {}, {"b": 'x"y'}]
