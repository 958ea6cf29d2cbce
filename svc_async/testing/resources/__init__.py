"""The fake's API, one module per resource, as ``svc_async.resources`` has one per
sub-client.

Each module declares its routes (``ROUTES``), its request rules, its handlers and its
wire shape (``render_*``) together: ``auth``, ``orgs``, ``seasons``, ``events``,
``entries`` and ``jobs``. ``base`` holds what they share: the route type,
the routed call, the part of the core a handler reads, and the request helpers. The core
(``testing/core.py``) only gathers the route tables.
"""
