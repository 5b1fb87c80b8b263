"""The sidecar's half of proxy mode: it runs the relay process and mirrors what the relay hands over.

    supervisor.py  binds the proxy port, runs and restarts the relay process, reads the hand-off channel
    extract.py     decisions and outcomes extracted from finished exchanges, offered to the mirror

These modules hold the catalog, the metrics and the mirror; the relay (`shadow.proxy`) imports none of them.
"""
