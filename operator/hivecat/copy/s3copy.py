"""S3 -> S3 copies done by S3 itself: CopyObject, or UploadPartCopy above the single-copy limit.

No object bytes pass through the copying process. The copy is pinned to the listed version of the
source with CopySourceIfMatch, and verified by ETag: a single CopyObject of a single-part object
yields the source's ETag (the MD5 of its content). A multipart copy gets a new multipart ETag that
cannot be compared with the source's; there the checks are the pinned source (CopySourceIfMatch on
every part), the part count in the new ETag and the final size.
"""

from __future__ import annotations

from hivecat.copy.storage import Location

MAX_SINGLE_COPY = 5 * 1024**3       # S3's limit for one CopyObject
DEFAULT_PART_SIZE = 512 * 1024**2


class ServerSideCopyFailed(Exception):
    pass


def _bucket_key(location: Location) -> tuple[str, str]:
    bucket, _, key = location.path.partition("/")
    if bucket != location.authority or not key:  # never another bucket's object, nor a whole bucket
        raise ValueError(f"{location.path!r} is not an object of bucket {location.authority!r}")
    return bucket, key


def server_side_copy(client, source: Location, dest: Location, size: int, mtime_ns: int,
                     multipart_threshold: int = MAX_SINGLE_COPY, part_size: int = DEFAULT_PART_SIZE) -> str:
    """Copy `source` to `dest` inside S3; return the new object's ETag."""
    src_bucket, src_key = _bucket_key(source)
    dst_bucket, dst_key = _bucket_key(dest)
    head = client.head_object(Bucket=src_bucket, Key=src_key)
    if head["ContentLength"] != size or int(head["LastModified"].timestamp()) != mtime_ns // 1_000_000_000:
        raise ServerSideCopyFailed("the source changed since it was listed (rerun to copy the new version)")
    etag = head["ETag"]
    copy_source = {"Bucket": src_bucket, "Key": src_key}
    if size <= multipart_threshold:
        result = client.copy_object(Bucket=dst_bucket, Key=dst_key, CopySource=copy_source,
                                    CopySourceIfMatch=etag, MetadataDirective="COPY")
        new_etag = result["CopyObjectResult"]["ETag"]
        if "-" not in etag and new_etag != etag:
            raise ServerSideCopyFailed(f"ETag mismatch after copy: source {etag}, copy {new_etag}")
        return new_etag
    return _multipart_copy(client, copy_source, etag, dst_bucket, dst_key, size, part_size)


def _multipart_copy(client, copy_source: dict[str, str], etag: str, bucket: str, key: str, size: int,
                    part_size: int) -> str:
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    try:
        parts = []
        for number, start in enumerate(range(0, size, part_size), start=1):
            end = min(start + part_size, size) - 1
            result = client.upload_part_copy(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                                             CopySource=copy_source, CopySourceIfMatch=etag,
                                             CopySourceRange=f"bytes={start}-{end}")
            parts.append({"PartNumber": number, "ETag": result["CopyPartResult"]["ETag"]})
        done = client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                                MultipartUpload={"Parts": parts})
    except Exception:
        client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        raise
    if not done["ETag"].strip('"').endswith(f"-{len(parts)}"):
        raise ServerSideCopyFailed(f"unexpected ETag {done['ETag']} for a {len(parts)}-part copy")
    return done["ETag"]


def copy_object(client, source: Location, dest: Location) -> None:
    """A plain server-side copy of a staged object into place (the commit on object stores)."""
    src_bucket, src_key = _bucket_key(source)
    dst_bucket, dst_key = _bucket_key(dest)
    head = client.head_object(Bucket=src_bucket, Key=src_key)
    if head["ContentLength"] > MAX_SINGLE_COPY:
        _multipart_copy(client, {"Bucket": src_bucket, "Key": src_key}, head["ETag"], dst_bucket, dst_key,
                        head["ContentLength"], DEFAULT_PART_SIZE)
    else:
        client.copy_object(Bucket=dst_bucket, Key=dst_key, CopySource={"Bucket": src_bucket, "Key": src_key},
                           MetadataDirective="COPY")


def delete_objects(client, locations: list[Location]) -> None:
    """Delete objects with boto3: pyarrow's deletes leave directory-marker objects behind."""
    for bucket in {loc.authority for loc in locations}:
        keys = [_bucket_key(loc)[1] for loc in locations if loc.authority == bucket]
        for start in range(0, len(keys), 1000):  # S3's batch limit
            client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]],
                                                         "Quiet": True})


def delete_prefix(client, prefix: Location) -> None:
    """Delete every object below `prefix` (a "directory")."""
    bucket, key = _bucket_key(prefix)
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key.rstrip("/") + "/")
    delete_objects(client, [Location("s3", bucket, f"{bucket}/{o['Key']}")
                            for page in pages for o in page.get("Contents", [])])
