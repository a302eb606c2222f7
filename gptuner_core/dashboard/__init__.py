"""The Streamlit dashboard's support code: the only package that imports streamlit.

``workspace`` and ``launch`` are plain Python (no streamlit) so they are testable directly;
``state``, ``data`` and ``widgets`` import streamlit and are used only by ``app.py`` and ``app_pages/``.
"""
