"""chatlog"""
