"""Resource-scoped sub-clients: one module per resource of the interface."""
