"""Running a job: corpus chunks, the worker pool with its ordered writes, and the same
job on Apache Beam (DirectRunner, Dask, Dataflow)."""
