"""The experiments' data files: JSON package data, one file per row, task or model, each
checked against its fields so that a bad file is named with the field that is wrong."""
import glob
import json
import os

from common.cli_options import UserError

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The rows' measured numbers, committed (experiments.tables renders the docs' tables from them).
MEASURED_DIR = os.path.join(PACKAGE_DIR, "measured")


def read_fields(path, fields, optional=None):
    """{field: value} of the JSON object in `path`, every field of `fields` ({name: type})
    present with its type, `optional` ({name: default}) filled in; UserError naming the file
    and field otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a readable JSON file ({error})") from None
    return check_fields(path, data, fields, optional)


def check_fields(where, data, fields, optional=None):
    """read_fields' checks of an object already read (`where` names it in messages)."""
    if not isinstance(data, dict):
        raise UserError(f"{where}: not a JSON object")
    values = dict(optional or {}, **data)
    unknown = sorted(set(values) - set(fields))
    missing = sorted(set(fields) - set(values))
    if unknown or missing:
        raise UserError(f"{where}: " + "; ".join(filter(None, [
            unknown and f"unknown field(s) {', '.join(unknown)}",
            missing and f"missing field(s) {', '.join(missing)}"])) + f"; the fields are "
            f"{', '.join(fields)}")
    for field, kind in fields.items():
        if not isinstance(values[field], kind):
            raise UserError(f"{where}: {field} must be a {kind.__name__}")
    return values


def read_folder(folder, fields, optional=None):
    """{file name without .json: read_fields(...)} of every JSON file in PACKAGE_DIR/folder,
    ordered by their "order" field."""
    found = {os.path.splitext(os.path.basename(path))[0]: read_fields(path, fields, optional)
             for path in glob.glob(os.path.join(PACKAGE_DIR, folder, "*.json"))}
    return dict(sorted(found.items(), key=lambda item: (item[1].get("order", 0), item[0])))


def read_measured(measured_dir, name):
    """The JSON of measured_dir/NAME.json (a table's numbers); UserError naming the file."""
    path = os.path.join(measured_dir, f"{name}.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a readable JSON file ({error})") from None
