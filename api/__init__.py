"""The planner's REST API (FastAPI): the answers `planner` computes, served over HTTP.

``api.app:app`` is the ASGI application; ``planner serve`` runs it with uvicorn. Bodies are the
planner's own pydantic models, so CLI ``--json``, plan files and the API share one schema.
"""
