"""Dynamic Resource Allocation (resource.k8s.io/v1): what the scheduler needs to pick devices for
ResourceClaims. ``cel``: the CEL device selectors of DeviceClasses and claim requests."""
