"""Graph-aware static feature caches (degree, presample, none) and their hit/miss counters."""

from remotegnn.cache.feature_cache import CacheCounters, FeatureCache
from remotegnn.cache.policy import POLICIES, degree_ranking, rank_nodes

__all__ = ["POLICIES", "CacheCounters", "FeatureCache", "degree_ranking", "rank_nodes"]
