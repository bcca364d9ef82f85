"""The service's endpoints, one router per domain; ``service.app`` mounts them."""
