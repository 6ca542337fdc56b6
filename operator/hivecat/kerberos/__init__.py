"""Kerberos for hivecat's clients: logins (login.py), why one failed in one line (errors.py), SPNEGO for HTTP
(spnego.py). Through MIT krb5's GSS-API (python-gssapi). No kopf, no Kubernetes: the operator and the CLI share it.
"""
