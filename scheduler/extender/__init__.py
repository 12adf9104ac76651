"""Extender mode: the scheduler's plugins served as kube-scheduler extender webhooks.

The stock kube-scheduler keeps doing everything it does and POSTs each pod to this process for an extra
filter and score: ``protocol`` (the extender/v1 wire format), ``service`` (the answers, from a profile's
plugins and the cache), ``runtime`` (informers, cache and the HTTP listener). Run it with
``python -m scheduler extender --config FILE [--kubeconfig FILE] --listen HOST:PORT``.
"""
