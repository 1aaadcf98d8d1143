"""conversation"""
