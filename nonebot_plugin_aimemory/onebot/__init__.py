"""onebot"""
