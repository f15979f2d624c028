"""``cuco serve``: the read-only web leaderboard over a candidates database.

``app.create_app`` builds the FastAPI app, ``app.run_serve`` serves it. Every page is a view
function returning a plain, JSON-ready dict (``views``, ``candidate_view``, ``lineage``): the
Jinja2 template renders exactly that dict and the page's JSON twin (the same path under ``/api``)
returns it. Text from candidates and LLMs only ever reaches HTML through Jinja2's autoescape.
"""
