"""The HTTP service (``profiles serve``): ``app`` puts every router together; ``tenants`` are the
API keys; ``conventions`` the one error body and HBase failure mapping; ``edge`` what every
request meets first; ``header_deadline`` uvicorn's HTTP protocol with a deadline on request
headers; ``metrics`` Prometheus; ``api_docs`` the offline OpenAPI page; ``routes/`` the
endpoints of each domain.
"""
