"""The HTTP shell: thin FastAPI routers over the service functions, problem+json errors."""
