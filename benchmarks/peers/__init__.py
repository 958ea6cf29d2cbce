"""Peer implementations of the SDK's entry models, for the decode benchmark only.

``msgspec_models`` and ``pydantic_models`` describe the same JSON shapes as
``svc_async.models`` (Entry -> fields, soundRecording -> songs -> licenseChecks ->
licenseData -> svcLicense / externalLicense), so each library parses the whole payload.
Open enumerations are plain ``str`` here (the SDK also maps them to StrEnum members).
"""
