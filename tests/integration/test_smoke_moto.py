"""moto server is real HTTP: Glue and S3 round-trip through boto3, and reset empties it."""

import pytest


def test_glue_database_round_trips_location(moto) -> None:
    glue = moto.client("glue")
    glue.create_database(DatabaseInput={"Name": "sales", "LocationUri": "s3://lake/warehouse/sales.db"})
    assert glue.get_database(Name="sales")["Database"]["LocationUri"] == "s3://lake/warehouse/sales.db"
    assert [d["Name"] for d in glue.get_databases()["DatabaseList"]] == ["sales"]


def test_s3_object_round_trips(moto) -> None:
    s3 = moto.client("s3")
    s3.create_bucket(Bucket="lake")
    s3.put_object(Bucket="lake", Key="warehouse/t/part-0.parquet", Body=b"PAR1")
    assert s3.get_object(Bucket="lake", Key="warehouse/t/part-0.parquet")["Body"].read() == b"PAR1"


def test_reset_empties_state(moto) -> None:
    glue = moto.client("glue")
    glue.create_database(DatabaseInput={"Name": "gone"})
    moto.reset()
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_database(Name="gone")
